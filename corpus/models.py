"""Plain data of the corpus layer: cues, lectures, segments, hits."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cue:
    """One timed piece of a transcript (an SRT cue, a Whisper segment, a sentence)."""

    start: float
    end: float
    text: str


@dataclass
class LectureMeta:
    """What we know about a lecture besides its words."""

    lecture_id: str
    title: str = ""
    url: str = ""
    course: str = ""


@dataclass
class Lecture:
    """A transcript read from one file, with its metadata."""

    meta: LectureMeta
    cues: list[Cue]
    source: str
    fmt: str
    skipped_sources: list[str] = field(default_factory=list)

    @property
    def lecture_id(self) -> str:
        return self.meta.lecture_id


@dataclass(frozen=True)
class Window:
    """A time window of a lecture before it gets a corpus id."""

    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Segment:
    """A stored, searchable window: the unit retrieval returns and answers cite."""

    corpus_id: int
    lecture_id: str
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Hit:
    """One search result, in the shape the reference report lists them."""

    corpus_id: int
    score: float
    lecture_id: str
    title: str
    url: str
    start: float
    end: float
    text: str
    answer_start: float | None = None
    """Where inside the window its best-matching unit starts (None: unknown, use ``start``)."""
    unit_score: float | None = None
    """The E5 cosine of the window's most similar unit (its 30 s passages) to the question
    (None: an index without units, or a search that did not read them). A two-minute window's
    own cosine is diluted by what else it says; the evidence gate reads this one."""

    @classmethod
    def span(cls, lecture_id: str, start: float, end: float, text: str = "") -> Hit:
        """A stretch of a lecture that no search returned (no id, no score, no title): what
        the cue and sentence look-ups take to read the seconds ``start``-``end``."""
        return cls(-1, 0.0, lecture_id, "", "", start, end, text)

    @property
    def link_start(self) -> float:
        """The second a link to this hit opens at."""
        return self.start if self.answer_start is None else self.answer_start

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
