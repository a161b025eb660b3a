"""Requests to sum up a lecture: "resume o vídeo sobre bitcoin", "me faz um resumo da aula de
autovetores", "summarize the backprop lecture".

Asked as a question, such a request was searched and gated like one: "resume o video sobre
bitcoin" reached the gate as "resume bitcoin", whose E5 similarity to any window is low
(0.84: a topic, not a question), and was declined with the bitcoin lecture's windows first,
second and third. A summary is about a lecture, not a moment, so (pure functions here; the
answerer calls them):

- ``asks_summary`` tells such a request from a question (a "resumo" inside a question about
  something else, "a fórmula resume o quê?", is not one);
- ``summary_topic`` is the request without its asking and its naming of the lecture, what is
  searched and gated ("resume o vídeo sobre bitcoin" -> "bitcoin");
- ``summary_lecture`` is the lecture whose title names the topic, else the one most of the
  first hits are from, and ``summary_decision`` covers the request when that lecture says each
  word of the topic in its title or in several windows;
- ``spread``: the lecture's windows the summary reads, evenly over its length, in its order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

from answer.evidence import Decision
from answer.glossary import portuguese_words
from corpus.bm25 import tokenize
from corpus.text import fold

SUMMARY_PASSAGES = 5
"""Windows of the lecture a summary reads (each focused to the answer's passage size)."""

MIN_WINDOWS = 3
"""A lecture is about a topic when each of its words is said in this many of its windows."""

_ASKS = re.compile(
    r"\b(?:resum(?:e|a|ir|o|inho|ao|indo)|sintetiz\w*|sintese|pontos principais"
    r"|principais (?:pontos|ideias)|ideias principais|do que (?:se )?trata"
    r"|summar(?:y|ize|ise|izing|ising)|tl ?;? ?dr|main (?:points|ideas)|key points|recap)\b")

_REQUEST = re.compile(
    r"\b(?:(?:voce|vc|alguem)\s+)?(?:(?:me|nos|pode|poderia|consegue|da pra|tem como)\s+){0,2}"
    r"(?:(?:faz|faca|fazer|da|de|dar|manda|mandar|escreve|escrever|quero|queria|preciso(?: de)?"
    r"|gostaria de|tem)\s+)?(?:(?:um|uma|o|a)\s+)?"
    r"(?:resumo|resuminho|sintese|resum(?:e|a|ir|indo)|sintetiz\w*)\b"
    r"|\b(?:quais\s+(?:sao\s+)?)?(?:os\s+|as\s+)?(?:pontos principais|principais (?:pontos|ideias)"
    r"|ideias principais)\b"
    r"|\bdo que (?:se )?trata\b"
    r"|\b(?:(?:can|could)\s+you\s+)?(?:please\s+)?(?:give\s+me\s+)?(?:a\s+)?"
    r"(?:summary|summari[sz]e|recap|tl ?;? ?dr)(?:\s+of)?\b"
    r"|\b(?:what are\s+)?(?:the\s+)?(?:main (?:points|ideas)|key points)(?:\s+of)?\b"
    r"|\b(?:pra|para) mim\b|\bpor favor\b|\bpf+v?\b|\bplease\b")


def asks_summary(question: str) -> bool:
    """Whether ``question`` asks to sum up a lecture or a subject rather than asks about it:
    it names a summary and little else ("resume o vídeo sobre bitcoin"). A question that uses
    the word in passing ("pq a fórmula resume tudo em uma linha e o que ela diz sobre e^x?")
    has a question of its own and is answered as one."""
    folded = " ".join(fold(question).split())
    if not _ASKS.search(folded):
        return False
    rest = summary_topic(question)
    return len(re.findall(r"\w+", rest)) <= 8 and not re.search(
        r"\b(?:por ?que|pq|porque|como|qual|quais|quanto|o que|oq|why|how|which|what)\b",
        fold(rest))


def summary_topic(question: str) -> str:
    """``question`` without its asking for a summary and the words naming the lecture: "me faz
    um resumo da aula de autovetores pfv" -> "autovetores"."""
    folded = fold(question)
    if len(folded) != len(question):  # not composed: work on the folded text
        question = folded
    kept, last = [], 0
    for m in _REQUEST.finditer(folded):
        kept.append(question[last:m.start()])
        last = m.end()
    kept.append(question[last:])
    topic = " ".join("".join(kept).split()).strip(" ,;:?!.")
    named = _MEDIA.match(fold(topic))
    if named and named.end() < len(topic):
        topic = topic[named.end():]
    return topic or question


_MEDIA = re.compile(
    r"(?:(?:d[oa]s?|[oa]s?|n[oa]s?|the|this|that)\s+)?(?:video ?aula|aula|video|lecture|talk)s?"
    r"(?:\s+(?:d[eoa]s?|sobre|about|on|of)\b)?\s*")
""""da aula de", "o vídeo sobre", "the lecture about" opening a topic: the lecture is what is
summed up, its subject what is searched (and what the course-question check reads: "aula" is
one of its words)."""


def _topic_words(topic: str) -> list[set[str]]:
    """Each content word of ``topic`` as the stems a lecture may say it with: its own
    (``corpus.bm25.tokenize``, Portuguese Snowball) and, for an English name a Portuguese
    lecture translates ("backpropagation"), its glossary words' (``answer.glossary``). Words are
    stemmed with their accents folded first, on both sides, as the glossary writes them:
    "retropropagacao" and "retropropagação" stem apart otherwise."""
    words = []
    for word in re.findall(r"\w+", topic.lower()):
        own = [w for w in tokenize(fold(word)) if len(w) >= 3]
        if own:
            glossary = portuguese_words(fold(word))
            words.append({*own, *(w for pw in glossary for w in tokenize(pw))})
    return words


def lecture_covers(topic: str, texts: Sequence[str], title: str = "") -> tuple[bool, str]:
    """Whether a lecture whose windows are ``texts`` is about ``topic``: each of the topic's
    words is in its ``title`` or said in ``MIN_WINDOWS`` of its windows or more (all of them in
    a shorter lecture), and why not when it is not (the first word it says too seldom)."""
    words = _topic_words(topic)
    if not words or not texts:
        return False, "nothing to look for" if not words else "no windows"
    need = min(MIN_WINDOWS, len(texts))
    said = [set(tokenize(fold(t))) for t in texts]
    titled = set(tokenize(fold(title)))
    for alts in words:
        if alts & titled:
            continue
        n = sum(1 for stems in said if stems & alts)
        if n < need:
            return False, f"'{min(alts, key=len)}' in {n} of its {len(texts)} windows"
    return True, f"each word in {need}+ of its {len(texts)} windows"


def summary_decision(decision: Decision, topic: str, lecture: str, texts: Sequence[str],
                     title: str = "") -> Decision:
    """Covered when ``lecture`` (its windows' ``texts``, its ``title``) is about ``topic``
    (``lecture_covers``), whatever the gate decided for the topic read as a question: a bare
    topic is far from any window in E5 ("bitcoin", 0.85, declined with the bitcoin lecture's
    windows first), and the gate, fitted on questions, let topics the course never teaches
    through ("fotossíntese", "química orgânica"). The gate's P stays in the decision: a
    declined request's confidence."""
    covered, why = lecture_covers(topic, texts, title)
    return replace(decision, covered=covered, order=[0] if covered else [],
                   reason=f"summary of {lecture}: {why} ({decision.reason})")


def summary_lecture(lectures: Sequence[str], titles: Sequence[str] = (), topic: str = "") -> str:
    """The lecture to sum up: the first of the hits (``lectures``: their lecture ids in rank
    order; ``titles``: their lectures' titles) whose title has each word of ``topic`` ("Mas o
    que é uma convolução?" for "convolução", second behind a lecture that uses convolutions),
    else the one holding most of the first three hits, the first hit's on a tie."""
    words = _topic_words(topic) if topic else []
    if words:
        for lecture, title in zip(lectures, titles, strict=False):
            stems = set(tokenize(fold(title)))
            if all(alts & stems for alts in words):
                return lecture
    top = lectures[:3]
    return max(top, key=lambda lecture: (top.count(lecture), -top.index(lecture)))


T = TypeVar("T")


def spread(items: Sequence[T], n: int = SUMMARY_PASSAGES) -> list[T]:
    """``n`` of ``items`` evenly over them, first and last included, in their order."""
    if len(items) <= n:
        return list(items)
    if n <= 1:
        return [items[0]]
    picks = sorted({round(i * (len(items) - 1) / (n - 1)) for i in range(n)})
    return [items[i] for i in picks]
