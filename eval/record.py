"""One evaluated question as the study's Markdown report prints it, and back.

``render_record`` writes the exact shape of the reference report (``**Pergunta N**: ...``, the
retrieved segments, the answer, its references, the manual and automated annotations);
``parse_records`` reads one or many such records back, so a report is also a data file.

Missing values print as ``—``; AR and correctness print with two decimals (so a round trip
keeps them to 0.01). Parsed references carry no times (the Markdown only has title and link).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from corpus.models import Hit
from corpus.render import hit_markdown

MISSING = "—"
HIDDEN_REFERENCE = "Vídeo de referência oculto"
HIDDEN_URL = "oculto"
LABELS = ("C", "PC", "I")


class RecordParseError(ValueError):
    """A record of a Markdown report could not be read; the message names record and field."""


_Fail = Callable[[str, str], RecordParseError]


@dataclass(frozen=True)
class Reference:
    """A video an answer cites: title, link, and the cited span in seconds when known."""

    title: str
    url: str
    start: float | None = None
    end: float | None = None


@dataclass
class Record:
    """One question of an evaluation report: retrieval, answer, annotations, judge reasoning."""

    qid: str
    question: str
    segments: list[Hit] = field(default_factory=list)
    answer: str = ""
    references: list[Reference] = field(default_factory=list)
    manual: str | None = None
    ar: float | None = None
    automated: str | None = None
    reasoning: str | None = None
    correctness: float | None = None
    correctness_reasoning: str | None = None


# Labels in the order a record prints them; the parser only accepts them in this order.
_QUESTION = "Pergunta"
_SEGMENTS = "Segmentos recuperados pelo E5"
_ANSWER = "Resposta gerada pelo LLM"
_REFERENCES = "Referências"
_MANUAL = "Anotação manual"
_AR = "Answer Relevance (AR)"
_AUTOMATED = "Anotação automatizada"
_REASONING = "Raciocínio (AR CoT)"
_CORRECTNESS = "Correção"
_CORRECTNESS_REASONING = "Raciocínio (Correção CoT)"
_ORDER = (
    _SEGMENTS,
    _ANSWER,
    _REFERENCES,
    _MANUAL,
    _AR,
    _AUTOMATED,
    _REASONING,
    _CORRECTNESS,
    _CORRECTNESS_REASONING,
)
_REQUIRED = (_SEGMENTS, _ANSWER)


def parse_timestamp(value: str | float | int) -> float:
    """Seconds from ``HH:MM:SS``, ``MM:SS`` or a plain number (``"2996"``, ``"2996.5"``)."""
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    if re.fullmatch(r"\d+(?:[.,]\d+)?", text):
        return float(text.replace(",", "."))
    match = re.fullmatch(r"(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:[.,]\d+)?)", text)
    if not match:
        raise ValueError(f"not a time (HH:MM:SS or seconds): {value!r}")
    hours, minutes, seconds = match.groups()
    return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds.replace(",", "."))


def _value(value: str | None) -> str:
    return MISSING if value is None or value == "" else value


def _fraction(value: float | None) -> str:
    return MISSING if value is None else f"{value:.2f}"


def render_record(rec: Record, hide_urls: bool = False) -> str:
    """The record in the reference report's Markdown shape, ending with a ``---`` line."""
    lines = [f"**{_QUESTION} {rec.qid}**: {rec.question}", "", f"**{_SEGMENTS}**:"]
    for hit in rec.segments:
        lines += [hit_markdown(replace(hit, score=float(hit.score)), hide_url=hide_urls), ""]
    lines += ["", f"**{_ANSWER}**: {_value(rec.answer)}", "", f"**{_REFERENCES}**:"]
    for ref in rec.references:
        if hide_urls:
            lines.append(f"- [{HIDDEN_REFERENCE}]()")
        else:
            lines.append(f"- [{ref.title}]({ref.url})")
    lines += [
        "",
        f"**{_MANUAL}**: {_value(rec.manual)}",
        "",
        f"**{_AR}**: {_fraction(rec.ar)}",
        "",
        f"**{_AUTOMATED}**: {_value(rec.automated)}",
        "",
        f"**{_REASONING}**: {_value(rec.reasoning)}",
    ]
    if rec.correctness is not None or rec.correctness_reasoning is not None:
        lines += [
            "",
            f"**{_CORRECTNESS}**: {_fraction(rec.correctness)}",
            "",
            f"**{_CORRECTNESS_REASONING}**: {_value(rec.correctness_reasoning)}",
        ]
    lines += ["", "", "---", ""]
    return "\n".join(lines)


def render_records(records: list[Record], hide_urls: bool = False) -> str:
    """A whole report: the records one after another, each closed by its ``---`` line."""
    return "\n".join(render_record(rec, hide_urls=hide_urls) for rec in records)


_HEADER_RE = re.compile(rf"^\*\*\s*{_QUESTION}\s+([^*\n]*?)\s*\*\*\s*:[ \t]*", re.MULTILINE)
_LABEL_RE = re.compile(
    r"^\*\*\s*(" + "|".join(re.escape(label) for label in _ORDER) + r")\s*\*\*\s*:[ \t]*",
    re.MULTILINE,
)
_SEGMENT_START_RE = re.compile(r"^-[ \t]*\*[ \t]*Corpus ID[ \t]*:?[ \t]*\*", re.MULTILINE)
_SEGMENT_FIELD_RE = re.compile(
    r"^-[ \t]*\*[ \t]*([^*\n]+?)[ \t]*:?[ \t]*\*[ \t]*:?[ \t]*", re.MULTILINE
)
_REFERENCE_RE = re.compile(r"^-\s*\[(.*)\]\((.*)\)\s*$")
_RULE_RE = re.compile(r"(?:\n\s*-{3,}\s*)+\s*$")


def parse_records(text: str) -> list[Record]:
    """Every record in a Markdown report (one or many; ``---`` separators optional)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    headers = list(_HEADER_RE.finditer(text))
    if not headers:
        raise RecordParseError(f"record 1: no '**{_QUESTION} N**:' line found")
    records = []
    for number, header in enumerate(headers, start=1):
        end = headers[number].start() if number < len(headers) else len(text)
        body = _RULE_RE.sub("", text[header.end() : end])
        records.append(_parse_record(number, header.group(1).strip(), body))
    return records


def _parse_record(number: int, qid: str, body: str) -> Record:
    def fail(label: str, problem: str) -> RecordParseError:
        return RecordParseError(f"record {number} (Pergunta {qid}): {label}: {problem}")

    if not qid:
        raise fail(_QUESTION, "the question has no number")
    question, values = _split_fields(body)
    for label in _REQUIRED:
        if label not in values:
            raise fail(label, "field missing")
    if not question:
        raise fail(_QUESTION, "the question is empty")
    return Record(
        qid=qid,
        question=question,
        segments=_parse_segments(values[_SEGMENTS], fail),
        answer=_text(values[_ANSWER]) or "",
        references=_parse_references(values.get(_REFERENCES, ""), fail),
        manual=_label(values.get(_MANUAL), _MANUAL, fail),
        ar=_unit_float(values.get(_AR), _AR, fail),
        automated=_label(values.get(_AUTOMATED), _AUTOMATED, fail),
        reasoning=_text(values.get(_REASONING)),
        correctness=_unit_float(values.get(_CORRECTNESS), _CORRECTNESS, fail),
        correctness_reasoning=_text(values.get(_CORRECTNESS_REASONING)),
    )


def _split_fields(body: str) -> tuple[str, dict[str, str]]:
    """The question text and each labelled field's raw value, labels taken in print order."""
    accepted: list[tuple[str, int, int]] = []
    last = -1
    for match in _LABEL_RE.finditer(body):
        rank = _ORDER.index(match.group(1))
        if rank > last:  # a label out of order is part of the previous field's text
            accepted.append((match.group(1), match.start(), match.end()))
            last = rank
    question_end = accepted[0][1] if accepted else len(body)
    values = {}
    for i, (label, _, value_start) in enumerate(accepted):
        value_end = accepted[i + 1][1] if i + 1 < len(accepted) else len(body)
        values[label] = body[value_start:value_end]
    return body[:question_end].strip(), values


def _text(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return None if value in ("", MISSING) else value


def _label(value: str | None, label: str, fail: _Fail) -> str | None:
    text = _text(value)
    if text is None:
        return None
    if text.upper() not in LABELS:
        raise fail(label, f"{text!r} is not one of C, PC, I")
    return text.upper()


def _unit_float(value: str | None, label: str, fail: _Fail) -> float | None:
    text = _text(value)
    if text is None:
        return None
    try:
        number = float(text.replace(",", "."))
    except ValueError:
        raise fail(label, f"{text!r} is not a number") from None
    if not 0.0 <= number <= 1.0:
        raise fail(label, f"{number} is outside 0..1")
    return number


def _parse_references(value: str, fail: _Fail) -> list[Reference]:
    refs = []
    for line in value.strip().splitlines():
        line = line.strip()
        if not line:
            continue
        match = _REFERENCE_RE.match(line)
        if not match:
            raise fail(_REFERENCES, f"not a '- [title](url)' line: {line[:80]!r}")
        title, url = match.group(1).strip(), match.group(2).strip()
        if title == HIDDEN_REFERENCE and not url:
            title = ""
        refs.append(Reference(title=title, url=url))
    return refs


def _parse_segments(value: str, fail: _Fail) -> list[Hit]:
    starts = [m.start() for m in _SEGMENT_START_RE.finditer(value)]
    if not starts:
        if _text(value) is not None:
            raise fail(_SEGMENTS, "no '- *Corpus ID:*' line found")
        return []
    bounds = starts + [len(value)]
    return [
        _parse_segment(value[bounds[i] : bounds[i + 1]], i + 1, fail) for i in range(len(starts))
    ]


def _parse_segment(block: str, index: int, fail: _Fail) -> Hit:
    matches = list(_SEGMENT_FIELD_RE.finditer(block))
    raw: dict[str, str] = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(block)
        name = match.group(1).strip().lower()
        if name.startswith("transcri"):  # the text runs to the end of the block
            raw[name] = block[match.end() :]
            break
        raw[name] = block[match.end() : end]

    def field_value(name: str, required: bool = True) -> str:
        for key, text in raw.items():
            if key.startswith(name):
                return text.strip()
        if required:
            raise fail(f"segment {index}", f"field '{name}' missing")
        return ""

    where = f"segment {index}"
    try:
        corpus_id = int(field_value("corpus"))
    except ValueError:
        raise fail(where, f"Corpus ID {field_value('corpus')!r} is not an integer") from None
    try:
        score = float(field_value("score"))
    except ValueError:
        raise fail(where, f"Score {field_value('score')!r} is not a number") from None
    times = []
    for name, shown in (("in", "Início"), ("fim", "Fim")):
        try:
            times.append(parse_timestamp(field_value(name)))
        except ValueError as exc:
            raise fail(where, f"{shown}: {exc}") from None
    url = field_value("url", required=False)
    if url in (HIDDEN_URL, MISSING):
        url = ""
    title, lecture_id = _parse_lecture(field_value("aula", required=False))
    return Hit(
        corpus_id=corpus_id,
        score=score,
        lecture_id=lecture_id,
        title=title,
        url=url,
        start=times[0],
        end=times[1],
        text=field_value("transcri"),
    )


def _parse_lecture(value: str) -> tuple[str, str]:
    """``"Title (lecture_id)"`` as ``corpus.render.hit_markdown`` prints it with the lecture."""
    match = re.fullmatch(r"(.*)\s+\(([^()]*)\)", value)
    if match:
        return match.group(1).strip(), match.group(2).strip()
    return value, ""
