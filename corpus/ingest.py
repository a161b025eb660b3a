"""Ingest: transcripts -> segments -> E5 vectors -> a new index version, with a summary."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from corpus.asr import MediaTranscripts
from corpus.discover import Found, discover, load, other_transcripts, siblings
from corpus.embed import Embedder
from corpus.errors import InputError
from corpus.index import IndexData, IndexStore, empty_data, merge_lectures, same_content
from corpus.models import Cue, Window
from corpus.readers import whisper_json
from corpus.readers.errors import TranscriptError
from corpus.repeats import REPEAT_SHARE, misfiled, repeated_lectures, text_share
from corpus.segment import (
    MIN_WINDOW_WORDS,
    SPOKEN_SECONDS_PER_WORD,
    believable_ends,
    segment_by_time,
    segment_by_tokens,
)
from corpus.units import UNIT_OVERLAP_SECONDS, UNIT_SECONDS, make_units

log = logging.getLogger(__name__)


@dataclass
class SegmentParams:
    window_seconds: float = 120.0
    overlap_seconds: float = 30.0
    window_tokens: int | None = None
    overlap_tokens: int | None = None
    unit_seconds: float = UNIT_SECONDS
    """Length of the short units that locate answers inside windows (0: no units)."""
    unit_overlap_seconds: float = UNIT_OVERLAP_SECONDS

    def units_dict(self) -> dict[str, float]:
        return {"seconds": self.unit_seconds, "overlap": self.unit_overlap_seconds}

    def as_dict(self) -> dict[str, Any]:
        if self.window_tokens:
            return {"by": "tokens", "window": self.window_tokens,
                    "overlap": self.overlap_tokens or 0}
        return {"by": "seconds", "window": self.window_seconds, "overlap": self.overlap_seconds}


@dataclass
class IngestSummary:
    """What an ingest did, for people (``str``) and scripts (``as_dict``)."""

    index_dir: str = ""
    lectures: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    repeated: list[dict[str, Any]] = field(default_factory=list)
    """Lectures read now whose sentences mostly repeat another lecture's (a transcript filed
    under the wrong lecture, or uploaded twice). Each carries the ``source`` file it was read
    from and the one of the two that search shows (``searched``: the lecture whose title the
    text fits, ``corpus.repeats.misfiled``); search leaves the other out."""
    others: dict[str, list[str]] = field(default_factory=dict)
    """For an empty or repeating transcript (by its path): the other transcript files in its
    folder that were not read (``--include`` left them out), which may hold the lecture."""
    replaced: list[dict[str, Any]] = field(default_factory=list)
    """Transcripts that were empty (``why``: "empty") or repeated another lecture (``why``:
    that lecture's id) and the other transcript beside them that was ``read`` instead."""
    unreadable: list[dict[str, str]] = field(default_factory=list)
    """Other transcripts beside an empty or repeating one that were tried in its place and
    could not be read (``path``, ``error`` naming the line): a broken file the operator may
    want to mend, since it may hold the lecture."""
    stretched: list[dict[str, Any]] = field(default_factory=list)
    """Transcripts with cues lasting far longer than their words take (``believable_ends``):
    ``path``, how many ``cues``, and the longest one's ``start``, ``seconds`` and ``words``.
    Their ends were cut, so that no window or citation spans the untranscribed minutes."""
    embedded: int = 0
    units_embedded: int = 0
    reused: int = 0
    total_segments: int = 0
    total_lectures: int = 0
    vector_store: dict[str, Any] = field(default_factory=dict)
    """What the shared vector store did (``MilvusStore.sync``), when there is one."""
    unchanged: bool = False
    """The lectures read hold what the index already held: no new version was written."""
    media: list[dict[str, Any]] = field(default_factory=list)
    """Each recording read (``corpus.asr.MediaTranscript``): its transcript, and whether it
    was transcribed now (audio seconds, time, real-time factor) or its transcript found."""
    transcribed: int = 0
    """How many recordings were transcribed by this ingest (0 when every one was found)."""

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def make_windows(
    cues: list[Cue], params: SegmentParams, count_tokens: Callable[[str], int] | None
) -> list[Window]:
    if params.window_tokens:
        if count_tokens is None:
            raise InputError("token windows need the embedder's tokenizer")
        return segment_by_tokens(
            cues, count_tokens, params.window_tokens, params.overlap_tokens or 0,
            MIN_WINDOW_WORDS)
    return segment_by_time(cues, params.window_seconds, params.overlap_seconds, MIN_WINDOW_WORDS)


Timed = list[tuple[float, float, str]]
"""(start, end, text) rows of one lecture: its windows, cues or units."""


@dataclass
class _Reading:
    """What the transcripts read so far hold, per lecture id, for ``merge_lectures``."""

    summary: IngestSummary
    params: SegmentParams
    count_tokens: Callable[[str], int] | None
    updates: dict[str, tuple[dict[str, str], Timed]] = field(default_factory=dict)
    timed: dict[str, Timed] = field(default_factory=dict)
    units: dict[str, Timed] | None = None
    read: dict[str, Found] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.params.unit_seconds > 0:
            self.units = {}

    def add(self, item: Found, cues: list[Cue]) -> None:
        """Segment ``item``'s cues and keep them (replacing what its lecture id held)."""
        cues, stretched = believable_ends(cues)
        if stretched:
            _note_stretched(self.summary, item.path, stretched)
        windows = make_windows(cues, self.params, self.count_tokens)
        lecture_id = item.meta.lecture_id
        self.read[lecture_id] = item
        self.updates[lecture_id] = (_lecture_meta(item),
                                    [(w.start, w.end, w.text) for w in windows])
        self.timed[lecture_id] = [(c.start, c.end, c.text.strip())
                                  for c in cues if c.text.strip()]
        if self.units is not None:
            self.units[lecture_id] = [
                (u.start, u.end, u.text)
                for u in make_units(cues, self.params.unit_seconds,
                                    self.params.unit_overlap_seconds)]
        lectures = self.summary.lectures
        lectures[:] = [lec for lec in lectures if lec["lecture_id"] != lecture_id]
        lectures.append(
            {"lecture_id": lecture_id, "title": item.meta.title, "format": item.fmt,
             "segments": len(windows), "source": str(item.path)}
        )


def _lecture_meta(item: Found) -> dict[str, str]:
    return {
        "lecture_id": item.meta.lecture_id, "title": item.meta.title, "url": item.meta.url,
        "course": item.meta.course, "source": str(item.path), "fmt": item.fmt,
    }


def ingest(
    paths: list[Path],
    store: IndexStore,
    embedder: Embedder,
    *,
    include: list[str] | None = None,
    manifest: Path | None = None,
    params: SegmentParams | None = None,
    index_kind: str = "flat",
    progress: bool = False,
    vector_store: Any = None,
    media: MediaTranscripts | None = None,
) -> IngestSummary:
    """Read every transcript under ``paths`` and write a new index version.

    Files that fail to parse are listed in the summary and do not stop the others; the previous
    index stays live until the new version is complete. ``vector_store`` (a
    ``corpus.vector_store.MilvusStore``) is brought to the new version after the folder.
    Recordings are transcribed by ``media`` (by default Whisper base, transcripts kept in the
    index folder's ``transcripts/``; ``corpus.ray_asr.RayTranscripts`` spreads them over Ray).
    """
    params = params or SegmentParams()
    summary = IngestSummary(index_dir=str(store.root))
    found = discover(paths, include=include or [], manifest=manifest)
    summary.failed += [{"path": str(p), "error": str(e)} for p, e in found.failed]
    reading = _Reading(summary, params, getattr(embedder, "count_tokens", None))
    recordings = [item.path for item in found.lectures if item.fmt == "media"]
    if recordings:
        media = media or MediaTranscripts(store.root / "transcripts")
        media.prepare(recordings, progress)  # all at once where they are spread (Ray)
    _read_all(found.lectures, reading, store, media, progress)
    _replace_misfiled(summary, reading.read, reading.timed, reading.updates, reading.add)
    if not reading.updates:
        return summary
    with store.lock():
        data, existed = _current_data(store, embedder, params, index_kind,
                                      units=reading.units is not None)
        new, counts = _merged(data, reading, embedder, index_kind, progress)
        _write_version(store, data, new, existed, summary)
        if vector_store is not None:
            summary.vector_store = {"name": vector_store.name,
                                    **vector_store.sync(new, progress=progress)}
    if new.cues is not None:
        _note_repeated(summary, new.cues, new.lectures, set(reading.updates))
    summary.embedded = counts["embedded"]
    summary.units_embedded = counts.get("units_embedded", 0)
    summary.reused = counts["reused"]
    summary.total_segments = len(new.segments)
    summary.total_lectures = len(new.lectures)
    return summary


def _read_all(lectures: list[Found], reading: _Reading, store: IndexStore,
              media: MediaTranscripts | None, progress: bool) -> None:
    """Read each transcript (or recording) into ``reading``; a failed one is listed, an empty
    one replaced by a readable transcript beside it, when there is one."""
    summary = reading.summary
    for item in _iter(lectures, progress, "lendo transcrições"):
        if item.skipped:
            summary.duplicates.append(
                {"lecture_id": item.meta.lecture_id, "read": str(item.path),
                 "skipped": [str(s) for s in item.skipped]}
            )
        try:
            if item.fmt == "media":
                media = media or MediaTranscripts(store.root / "transcripts")
                cues = _transcribed(item, media, summary, progress)
            else:
                cues = load(item)
        except TranscriptError as exc:
            summary.failed.append({"path": str(item.path), "error": str(exc)})
            continue
        if not cues:
            replaced = _instead_of_empty(item, summary)
            if replaced is None:
                continue
            item, cues = replaced
        reading.add(item, cues)


def _instead_of_empty(item: Found, summary: IngestSummary) -> tuple[Found, list[Cue]] | None:
    """The first readable, non-empty transcript beside the empty ``item``, or None (then the
    empty one is listed in the summary)."""
    tried = siblings(item)
    alt = next(((s, c) for s, c in _readable(tried, summary) if c), None)
    if alt is None:
        log.warning("%s: empty transcript, skipped%s", item.path,
                    " (and so are the others beside it)" if tried else "")
        summary.empty.append(str(item.path))
        if not tried:  # those tried were read: nothing there for the operator
            _note_others(summary, item.path)
        return None
    _note_replaced(summary, item, alt[0], "empty")
    return alt


def _current_data(store: IndexStore, embedder: Embedder, params: SegmentParams,
                  index_kind: str, *, units: bool) -> tuple[IndexData, bool]:
    """The live index's data (without FAISS) and True, or a new empty one and False."""
    if not store.exists():
        return empty_data(
            embedder.model_id, embedder.dim,
            {"segmentation": params.as_dict(), "index_kind": index_kind},
        ), False
    data = store.load(with_faiss=False)
    store.check_model(data, embedder.model_id)
    if data.manifest.get("segmentation") != params.as_dict() or (
            units and data.manifest.get("units") != params.units_dict()):
        log.warning("segmentation parameters differ from the index's; "
                    "only the re-ingested lectures use the new ones")
    return data, True


def _merged(data: IndexData, reading: _Reading, embedder: Embedder, index_kind: str,
            progress: bool) -> tuple[IndexData, dict[str, int]]:
    """``data`` with the lectures read now in place of theirs, their new texts embedded."""

    def embed(texts: list[str], progress: bool = False) -> np.ndarray:
        return embedder.embed(texts, "passage", progress=progress)

    new, counts = merge_lectures(data, reading.updates, embed, progress=progress,
                                 cues=reading.timed, units=reading.units)
    new.manifest["index_kind"] = index_kind or new.manifest.get("index_kind", "flat")
    if new.units is not None and reading.units is not None:
        new.manifest["units"] = reading.params.units_dict()
    else:
        new.manifest.pop("units", None)
    return new, counts


def _write_version(store: IndexStore, data: IndexData, new: IndexData, existed: bool,
                   summary: IngestSummary) -> None:
    """Write ``new`` as the next version, unless it holds what the live one holds."""
    if existed and same_content(data, new):
        # the transcripts say what the index holds: the live version stays, and no server
        # reloads it for nothing
        summary.unchanged = True
        store.sweep()
    else:
        store.write(new)


def _note_repeated(summary: IngestSummary, cues: pd.DataFrame, lectures: pd.DataFrame,
                   read_now: set[str]) -> None:
    """List the lectures read now that mostly repeat another, and which one search shows."""
    summary.repeated = repeated_lectures(cues, read_now)
    left_out = misfiled(cues, dict(zip(lectures["lecture_id"].astype(str),
                                       lectures["title"].fillna("").astype(str),
                                       strict=True))) if summary.repeated else {}
    sources = {lec["lecture_id"]: lec["source"] for lec in summary.lectures}
    for rep in summary.repeated:
        pair = {rep["lecture_id"], rep["repeats"]}
        rep["searched"] = next((kept for gone, kept in left_out.items() if gone in pair), None)
        log.warning("%s repeats %s (%.0f%% of its sentences)", rep["lecture_id"],
                    rep["repeats"], 100 * rep["shared"])
        if rep["lecture_id"] in sources:
            rep["source"] = sources[rep["lecture_id"]]
            _note_others(summary, Path(rep["source"]))


def _transcribed(item: Found, media: MediaTranscripts, summary: IngestSummary,
                 progress: bool) -> list[Cue]:
    """The cues of a recording: its transcript found by content hash, else made now."""
    done = media.transcript_for(item.path, progress=progress)
    summary.media.append({"lecture_id": item.meta.lecture_id, **done.as_dict()})
    summary.transcribed += int(done.transcribed)
    return whisper_json.read(Path(done.transcript))


def _note_stretched(summary: IngestSummary, path: Path, stretched: list[Cue]) -> None:
    longest = max(stretched, key=lambda c: c.end - c.start)
    note = {"path": str(path), "cues": len(stretched), "start": longest.start,
            "seconds": round(longest.end - longest.start, 2),
            "words": len(longest.text.split())}
    summary.stretched.append(note)
    log.warning("%s: %d cue(s) last far longer than their words take (the longest %.0f s for "
                "%d words, from %.0f s); each now ends %.2f s a word after its start",
                path, len(stretched), note["seconds"], note["words"], longest.start,
                SPOKEN_SECONDS_PER_WORD)


def _readable(found: list[Found], summary: IngestSummary) -> Iterator[tuple[Found, list[Cue]]]:
    """Each of ``found`` that parses, with its cues; one that does not is recorded in
    ``summary.unreadable`` (its error names the file and line) and passed over."""
    for item in found:
        try:
            yield item, load(item)
        except TranscriptError as exc:
            if all(u["path"] != str(item.path) for u in summary.unreadable):
                summary.unreadable.append({"path": str(item.path), "error": str(exc)})
                log.warning("%s: tried in another transcript's place, not read: %s",
                            item.path, exc)


def _note_replaced(summary: IngestSummary, item: Found, alt: Found, why: str) -> None:
    summary.replaced.append({"lecture_id": item.meta.lecture_id, "path": str(item.path),
                             "why": why, "read": str(alt.path)})
    log.warning("%s: %s; read %s instead", item.path,
                "empty" if why == "empty" else f"repeats {why}", alt.path)


def _replace_misfiled(summary: IngestSummary, read: dict[str, Found],
                      timed: dict[str, list[tuple[float, float, str]]],
                      updates: dict[str, tuple[dict[str, str], Any]],
                      add: Callable[[Found, list[Cue]], None]) -> None:
    """A lecture read now whose transcript repeats another's and does not fit its title
    (``corpus.repeats.misfiled``) is read from the first other transcript beside it that does
    not repeat it (3b1b-pt's ``2016/change-of-basis``: its ``sentence_translations.json`` and
    ``auto_generated.srt`` hold the eigenvalues lecture, its ``community.srt`` its own)."""
    if len(timed) < 2:
        return
    frame = _cue_frame(timed)
    titles = {lid: meta["title"] for lid, (meta, _) in updates.items()}
    for gone, kept in misfiled(frame, titles).items():
        if gone not in read:
            continue
        own = [t for _, _, t in timed[kept]]
        for alt, cues in _readable(siblings(read[gone]), summary):
            texts = [c.text for c in cues if c.text.strip()]
            if texts and text_share(texts, own) < REPEAT_SHARE:
                _note_replaced(summary, read[gone], alt, kept)
                add(alt, cues)
                break


def _cue_frame(timed: dict[str, list[tuple[float, float, str]]]) -> pd.DataFrame:
    rows = [(lid, a, b, t) for lid, lines in timed.items() for a, b, t in lines]
    return pd.DataFrame(rows, columns=["lecture_id", "start", "end", "text"])


def _note_others(summary: IngestSummary, path: Path) -> None:
    others = other_transcripts(path)
    if others:
        summary.others[str(path)] = others


def _iter(items: list[Any], progress: bool, desc: str) -> Any:
    if not progress:
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit="aula")
