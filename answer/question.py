"""A student's question, read once: every later stage reads this value, none the raw text.

``understand`` makes it at the edge (the HTTP route, the CLI, a batch run): the language the
answer is written in, what is asked (an answer, a summary of a lecture, where something is said,
a comparison, or nothing at all: "?", "pq"), what is searched (the question without its chat
framing, a summary's topic, English names in the lectures' words), what the evidence check and
the gate read (that, without the question's mentions of the lecture or the teacher), what the
course-question check reads, and the two subjects a comparison names. ``searched_as`` reads
the same question again when it was translated for search.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from answer.evidence import asks_nothing
from answer.glossary import in_lecture_words
from answer.locate import asks_where, where_topic
from answer.summary import asks_summary, summary_topic
from corpus.compare import compared_subjects
from corpus.language import Lang, detect_language
from corpus.mentions import strip_mentions
from corpus.query import looks_english, strip_framing
from corpus.text import fold

Asks = Literal["answer", "summary", "where", "compare", "nothing"]


@dataclass(frozen=True)
class Question:
    """What the pipeline knows of a question, parsed once."""

    text: str
    """As the student typed it: what the generator reads and what the reply repeats."""
    language: Lang
    """The question's language: the answer's."""
    asks: Asks
    search: str
    """What is searched: framing, a summary's asking and English names rewritten (with the
    rewriter on), or its translation into the lectures' language (``searched_as``)."""
    about: str
    """What the focus, the evidence check and the gate read: ``search`` (a summary's topic)
    without its mentions of the lecture, the video or the teacher."""
    topic: str
    """What the course-question check reads: ``search`` without its asking where."""
    sides: tuple[str, str] | None = None
    """The two subjects a comparison names; each is searched too."""
    rewrite: bool = True
    translated: bool = False

    @property
    def folded(self) -> str:
        return fold(self.text)

    @property
    def where(self) -> bool:
        return self.asks == "where"

    @property
    def summary(self) -> bool:
        return self.asks == "summary"

    def searched_as(self, query: str) -> Question:
        """This question searched as ``query`` (its translation): what the later stages read
        is read from the translation; the answer keeps the question's language."""
        if query == self.search:
            return self
        return replace(self, search=query, translated=True,
                       **_reading(self.text, query, self.asks, self.rewrite))


def search_text(text: str, *, rewrite: bool = True, lectures: Lang = "pt") -> str:
    """What is searched for ``text``: without its chat framing ("oi gente,", "obrigado!!"),
    a summary request's asking ("resume o vídeo sobre"), and with English names in the
    lectures' Portuguese words ("o que é a chain rule?"), when the rewriter is on."""
    if not rewrite:
        return text
    query = strip_framing(text)
    if asks_summary(query):
        query = summary_topic(query)
    if not looks_english(query) and lectures == "pt":
        query = in_lecture_words(query)
    return query


def understand(text: str, *, rewrite: bool = True, lectures: Lang = "pt") -> Question:
    """``text`` read once (see the module's docstring). ``rewrite``: the query rewriter
    (``Settings.search.query_rewrite``); ``lectures``: the index's language."""
    if asks_nothing(text):
        asks: Asks = "nothing"
    elif asks_where(text):
        asks = "where"
    elif asks_summary(text):
        asks = "summary"
    else:
        asks = "answer"
    search = search_text(text, rewrite=rewrite, lectures=lectures)
    reading = _reading(text, search, asks, rewrite)
    if asks == "answer" and reading["sides"] is not None:
        asks = "compare"
    return Question(text, detect_language(text), asks, search, rewrite=rewrite, **reading)


def _reading(text: str, query: str, asks: Asks, rewrite: bool) -> dict:  # type: ignore[type-arg]
    """``about``, ``topic`` and ``sides`` of a question searched as ``query``."""
    if asks == "summary":  # "resume o vídeo sobre bitcoin" is read as its subject
        query = summary_topic(query)
    about = strip_mentions(query) if rewrite else query
    topic = where_topic(query) if asks == "where" else query
    sides = None if asks in ("summary", "nothing") else (
        compared_subjects(text) or compared_subjects(about))
    return {"about": about, "topic": topic, "sides": sides}
