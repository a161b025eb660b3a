"""Questions that ask where: "em que parte do vídeo ele explica a regra da cadeia?".

A student who asks which lecture, or which minute, wants the moment, not an explanation. The
embedded generator answered such a question with "Na aula [1], o professor explica a regra da
cadeia." and a quote of the lecture's opening. The retriever already knows the moment: so, once
the evidence gate has said the lectures cover the question, the reply names the lecture and the
second its best passage starts (the link opens there) and quotes how the passage begins, without
generating anything: exact, and as fast as the search.

Only questions that name the video, the lecture or the time count ("onde a derivada é zero?"
asks about mathematics, not about the video).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from answer.substance import without_boilerplate
from corpus.context import Passage, cut
from corpus.language import Lang
from corpus.text import fold

_MEDIA = r"(?:video|videos|aula|aulas|palestra|gravacao|lecture|lectures|clip)"
_WHO = r"(?:ele|ela|o professor|o prof|a professora|a prof|o cara|a aula|o video)"
_VERB = (r"(?:fala|falam|falou|explica|explicam|explicou|mostra|mostrou|ensina|ensinou|aborda|"
         r"trata|comenta|cita|aparece|apresenta|demonstra|deriva|faz|resolve|tem)")
_ASK = r"(?:(?:em|a partir de|de|no|na) )?(?:que|q|qual|quais) "
_VERB_EN = r"(?:explains?|covers?|talks?(?: about)?|shows?|discuss(?:es)?|derives?|mentions?)"
_WHERE_PT = re.compile(
    # "em que minuto", "qual trecho": only a video has those
    rf"\b{_ASK}(?:minuto|minutos|trecho)\b"
    # "em que parte do vídeo", "em que momento ele explica": a part of the video, not of a graph
    rf"|\b{_ASK}(?:parte|partes|momento|instante|ponto|tempo|hora) "
    rf"(?:(?:do|da|de) {_MEDIA}|(?:que )?{_WHO} {_VERB})\b"
    rf"|\b(?:em|no|na|de) (?:que|q|qual|quais) {_MEDIA}\b"
    rf"|\b(?:qual|que|q|quais) (?:o |a |os |as )?{_MEDIA} (?:que )?{_VERB}\b"
    # "onde ele explica ...?" opening the question; "no slide onde ele mostra ..." is a relative
    rf"|^\W*(?:e |mas |entao )?onde (?:que )?{_WHO} {_VERB}\b"
    rf"|\btem (?:algum|alguma|um|uma) {_MEDIA} (?:sobre|que|de|com)\b")
_WHERE_EN = re.compile(
    r"\bwhich (?:video|lecture|part|minute|timestamp|section)\b"
    r"|\bwhat (?:video|lecture|minute|timestamp)\b"
    r"|\bwhat (?:part|time|point|section) (?:of|in) the (?:video|lecture)\b"
    r"|\bwhere (?:in the (?:video|lecture)|does (?:he|she|the (?:lecturer|professor|video|"
    r"lecture)) (?:explain|talk|show|cover|discuss|derive|mention))\b"
    r"|\bat what (?:time|minute|point)\b"
    r"|\bis there (?:a|any) (?:video|lecture) (?:on|about|that|where)\b")

_LEAD = {
    "pt": "Isso está em «{title}», a partir de {at} [{n}].",
    "en": "That is in “{title}”, from {at} [{n}].",
}
_ALSO = {
    "pt": "Também em «{title}», a partir de {at} [{n}].",
    "en": "Also in “{title}”, from {at} [{n}].",
}
_BEGINS = {
    "pt": "O trecho começa assim: “{text}” [{n}]",
    "en": "The passage begins (in the lecture's words): “{text}” [{n}]",
}
QUOTE_CHARS = 240
APART_SECONDS = 180.0
"""A second passage is named too when it is in another lecture or this far from the first."""


def asks_where(question: str) -> bool:
    """Whether ``question`` asks which lecture or which moment (not what or why)."""
    folded = " ".join(fold(question).split())
    return bool(_WHERE_PT.search(folded) or _WHERE_EN.search(folded))


_AFTER = re.compile(
    rf"\s*(?:(?:do|da|de) {_MEDIA}\s*)?(?:(?:que )?{_WHO}\s+)?(?:(?:{_VERB}|{_VERB_EN})\s*)?"
    r"(?:(?:sobre|de|do|da|dos|das|a|o|os|as|about|the)\s+){0,2}")


def where_topic(question: str) -> str:
    """``question`` without its asking where: "em qual aula ele explica o que é um
    autovetor?" -> "que é um autovetor?". The course-question check reads this: "aula" and
    "vídeo" are its words too, and it took 5 of 9 such questions for questions about the course
    ("em que aula vai ser a prova?" keeps "vai ser a prova?", and is still one)."""
    folded = fold(question)
    if len(folded) != len(question):  # not composed: work on the folded text
        question = folded
    m = _WHERE_PT.search(folded) or _WHERE_EN.search(folded)
    if m is None:
        return question
    tail = _AFTER.match(folded, m.end())
    end = tail.end() if tail else m.end()
    return " ".join(f"{question[:m.start()]} {question[end:]}".split())


def clock(seconds: float) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour: how a video player shows the time."""
    s = max(0, int(seconds))
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


def where_answer(passages: Sequence[Passage], lang: Lang) -> str:
    """The reply to a where-question from the passages the gate passed, best first, citing
    them by number (1-based, in ``passages``' order)."""
    if not passages:
        return ""
    first = passages[0]
    title = first.hit.title or first.hit.lecture_id
    parts = [_LEAD[lang].format(title=title, at=clock(first.answer_start), n=1)]
    for n, p in enumerate(passages[1:], start=2):
        if (p.hit.lecture_id != first.hit.lecture_id
                or abs(p.answer_start - first.answer_start) >= APART_SECONDS):
            parts.append(_ALSO[lang].format(title=p.hit.title or p.hit.lecture_id,
                                            at=clock(p.answer_start), n=n))
            break
    words = without_boilerplate(first.text)
    if words:
        parts.append(_BEGINS[lang].format(text=cut(words, QUOTE_CHARS), n=1))
    return " ".join(parts)
