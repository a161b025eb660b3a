"""Questions that compare two subjects: "qual a diferença entre produto escalar e produto
vetorial?", "derivada vs integral", "difference between a Fourier series and a Fourier
transform".

Searched whole, such a question lands between its two subjects: E5 and BM25 reward a window
that says both words, so the first hits are a third lecture that mentions the two in passing
(the cross-product lecture's "escalar e vetorial" question went to divergence-and-curl), and
the lecture that teaches each subject is missing from what the answer reads. So
``compared_subjects`` reads the two subjects out of the question (pure), each is searched on
its own as well, and ``with_sides`` puts each one's best window beside the whole question's
first (the retriever's order otherwise kept). A question whose sides are not both a subject of
their own ("a diferença entre R e R0": "R" alone finds anything) is left as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

_SEP = r"(?:\s+(?:e|and|com|with|para|pra|pro|to)\s+)"
_PATTERNS = [
    # "diferença entre X e Y", "diferença de X pra Y", "difference between X and Y"
    re.compile(r"\b(?:diferen[çc]as?|distin[çc][ãa]o|differences?)\s+(?:entre|between|"
               r"de|do|da|dos|das|of)\s+(?P<a>.+?)" + _SEP + r"(?P<b>.+)", re.I),
    # "compare X com Y", "pode comparar X e Y?", "compare X and Y": asked, at the start
    re.compile(r"^(?:(?:vc|você|voce|tu|you)?\s*(?:pode|podes|poderia|consegue|can|could)?"
               r"\s*(?:you\s+)?(?:please\s+)?)compar(?:e|a|ar|ando|ing)\s+(?:entre\s+)?"
               r"(?P<a>.+?)" + _SEP + r"(?P<b>.+)", re.I),
    # "X vs Y", "X versus Y"
    re.compile(r"(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+)", re.I),
    # "em que X difere de Y", "how does X differ from Y"
    re.compile(r"(?P<a>.+?)\s+(?:difere[m]?|se diferencia[m]?|differs?)\s+"
               r"(?:de|do|da|dos|das|from)\s+(?P<b>.+)", re.I),
    # "por que X é diferente de Y?", "how is X different from Y?": asked as such
    re.compile(r"^(?:em que|no que|por\s*que|porque|pq|how|why)\s+(?P<a>.+?)\s+"
               r"(?:é|e|eh|são|sao|is|are)\s+(?:tão\s+|so\s+)?(?:diferentes?|different)\s+"
               r"(?:de|do|da|dos|das|from)\s+(?P<b>.+)", re.I),
    re.compile(r"^(?:how|why)\s+(?:is|are)\s+(?P<a>.+?)\s+(?:so\s+)?different\s+from\s+"
               r"(?P<b>.+)", re.I),
]
_LEAD = re.compile(
    r"^(?:(?:em que|no que|por\s*que|porque|pq|why|how|does|do|is|tem|existe|há|ha|"
    r"is there)\s+|"
    r"(?:qual|quais|what|whats|what's)\s+(?:é|e|eh|sao|são|is|are)?\s*(?:a|as|the)?\s*"
    r"(?:diferen[çc]as?|differences?)?\s*|(?:o|a|os|as|um|uma|the|an?)\s+)+", re.I)
_TAIL = re.compile(
    r"(?:\s*[,;:?!.]\s*.*|\s+(?:na prática|no fundo|exatamente|mesmo|afinal|então|entao|"
    r"in practice|exactly|really|again)\b.*|\s+(?:na|no|nas|nos|num|numa|em|in|on|for|para|"
    r"pra)\s+.*)$", re.I)
_ASIDE = re.compile(r"\([^()]*\)")
_ARTICLES = frozenset("o a os as um uma the an a".split())
_CONTENT = re.compile(r"[^\W\d_]{3,}|\w*\d\w*[^\W\d_]\w*")
MAX_SIDE_WORDS = 6
_CLAUSE = frozenset("que quando como onde porque se ele ela eles elas eu vc você voce gente "
                    "what when how where why he she they i you we it".split())

H = TypeVar("H")


def _side(text: str) -> str:
    text = _TAIL.sub("", text.strip())
    words = [w for w in text.split() if w]
    while words and words[0].lower() in _ARTICLES:
        words = words[1:]
    return " ".join(words).strip(" \"'“”‘’()")


def compared_subjects(question: str) -> tuple[str, str] | None:
    """The two subjects ``question`` compares, or None when it compares nothing, or when a
    side is not a subject of its own: no word of three letters, or a clause ("o que ele fez
    no começo": over ``MAX_SIDE_WORDS`` words, or opening with "que", "quando", "ele", ...)."""
    text = " ".join(_ASIDE.sub(" ", question).split())  # "(deslizar vs girar)": an aside
    for pattern in _PATTERNS:
        m = pattern.search(text)
        if m is None:
            continue
        raw = (_LEAD.sub("", m.group("a")), m.group("b"))
        a, b = (_side(x) for x in raw)
        if a.lower() == b.lower() or any(len(x.split()) > MAX_SIDE_WORDS + 3 for x in raw):
            return None
        for side in (a, b):
            words = side.lower().split()
            if (not _CONTENT.search(side) or not words or len(words) > MAX_SIDE_WORDS
                    or words[0] in _CLAUSE):
                return None
        return a, b
    return None


def with_sides(hits: Sequence[H], sides: Sequence[Sequence[H]], key: Callable[[H], Any],
               k: int, *, near: int = 2) -> list[H]:
    """``hits`` (the whole question's) with each side's best hit brought up to just after the
    first, unless it is among the first ``near`` already (the answer reads two passages); no
    hit twice, ``k`` at most."""
    head = list(hits[:1])
    seen = {key(h) for h in hits[:near]}
    for side in sides:
        if side and key(side[0]) not in seen:
            head.append(side[0])
            seen.add(key(side[0]))
    taken = {key(h) for h in head}
    rest = [h for h in hits[1:] if key(h) not in taken]
    return (head + rest)[:k]
