"""Questions asked in another language than the lectures', translated for search.

E5 matches an English question to Portuguese lectures only loosely, and BM25 and the evidence
gate's term coverage not at all: measured on the bench's English questions over 3b1b-pt, the
gate declined all 5 answerable ones, and passed all 5 once the question was translated, while
the 3 off-topic English questions stayed declined (``bench/cross_language.py`` measures it).
So when a question's language differs from the lectures', the LLM translates it once; search
and the evidence check use the translation, and the answer is written in the student's own
language from the original question. If the LLM fails, the question is searched as typed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from app.llm import LLMError
from corpus.kept import Kept
from corpus.language import Lang, detect_language

log = logging.getLogger(__name__)

_TARGET = {"pt": "Brazilian Portuguese", "en": "English"}
_PROMPT = ("Translate the student's question into {target}, keeping technical terms as a "
           "{target} lecture would say them. Do not answer it, even when it asks for an "
           "explanation: reply with the translation only.")
_EXAMPLE: dict[Lang, tuple[str, str]] = {
    # one worked example: a request for an explanation is translated, not answered (without
    # it the embedded model answered 4 of the bench's 35 questions instead of translating)
    "pt": ("can you explain the chain rule slowly? why do we multiply the derivatives",
           "Você pode explicar a regra da cadeia devagar? Por que multiplicamos as derivadas?"),
    "en": ("pode explicar a regra da cadeia devagar? pq multiplicamos as derivadas",
           "Can you explain the chain rule slowly? Why do we multiply the derivatives?"),
}


@dataclass
class QueryTranslator:
    """Translates questions with ``llm`` (``chat``), remembering the last ``cache`` ones."""

    llm: Any
    cache: int = 512
    _seen: Kept[tuple[str, str], str] = field(init=False)

    def __post_init__(self) -> None:
        self._seen = Kept(self.cache)

    def __call__(self, question: str, target: Lang) -> str:
        """``question`` in ``target``; the question as typed when the LLM fails or replies
        with something that is not a question's translation."""
        key = (question, target)
        seen = self._seen.get(key)
        if seen is not None:
            return seen
        shown, done = _EXAMPLE[target]
        messages = [{"role": "system", "content": _PROMPT.format(target=_TARGET[target])},
                    {"role": "user", "content": shown}, {"role": "assistant", "content": done},
                    {"role": "user", "content": question}]
        try:
            reply = self.llm.chat(messages, max_tokens=min(400, 40 + 2 * len(question) // 3))
        except LLMError as exc:
            log.warning("question not translated, searched as typed: %s", exc)
            return question
        text = clean_translation(reply, question)
        self._seen.put(key, text)
        return text


def clean_translation(reply: str, question: str) -> str:
    """The translation in an LLM ``reply``: its first non-empty line without quotes or a
    "Translation:" label; ``question`` itself when there is none or it is far longer than a
    translation would be."""
    lines = [ln.strip() for ln in (reply or "").splitlines() if ln.strip()]
    if not lines:
        return question
    text = lines[0]
    head, sep, rest = text.partition(":")
    if sep and head.strip().lower() in ("translation", "tradução", "traducao") and rest.strip():
        text = rest.strip()
    text = text.strip().strip('"“”«»\'').strip()
    if not text or len(text) > 3 * len(question) + 40:
        return question
    return text


def needs_translation(question: str, lectures: Lang) -> bool:
    """Whether ``question`` is in another language than the lectures'."""
    return detect_language(question) != lectures
