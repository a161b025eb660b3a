"""Which language a text is in (Portuguese or English), from its stop words. Pure functions.

Students write mostly in Portuguese; some ask in English about Portuguese lectures, and a course
may have English lectures. The answer is written in the question's language, and a question
in another language than the lectures' is translated for search (``answer.translate``).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal

Lang = Literal["pt", "en"]

STOPWORDS: dict[Lang, frozenset[str]] = {
    "pt": frozenset(
        "a o as os um uma uns umas de do da dos das em no na nos nas por pelo pela para pra com "
        "sem que qual quais quando onde como porque por que se e ou mas é são foi ser está estão "
        "tem têm ter isso isto esse essa este esta eu você vocês ele ela eles elas nós não sim "
        "mais menos muito também já ao aos à às entre sobre sua seu suas seus meu minha qual "
        "quanto diferença explique explica significa usar usa faz fazer".split()
    ),
    "en": frozenset(
        "the a an of in on at to for from with without what which when where why how who whom "
        "is are was were be been being do does did can could should would will and or but not "
        "this that these those it its i you we they he she my your our their there about into "
        "than then also difference explain mean means use used between".split()
    ),
}

_WORD = re.compile(r"[a-zà-ÿ']+")
_ACCENT = re.compile(r"[ãõçâêôáéíóú]")


def detect_language(text: str) -> Lang:
    """Portuguese or English, by counting stop words; ties go to Portuguese (most students)."""
    lower = text.lower()
    words = _WORD.findall(lower)
    pt = sum(w in STOPWORDS["pt"] for w in words) + 2 * len(_ACCENT.findall(lower))
    en = sum(w in STOPWORDS["en"] for w in words)
    return "en" if en > pt else "pt"


def corpus_language(texts: Sequence[str], sample: int = 200) -> Lang:
    """The language most of ``texts`` (up to ``sample`` of them, spread over the list) are in;
    Portuguese for none."""
    if not texts:
        return "pt"
    step = max(1, len(texts) // sample)
    votes = Counter(detect_language(t) for t in list(texts)[::step][:sample])
    return "en" if votes["en"] > votes["pt"] else "pt"


def word_counts_shipped(code: str) -> dict[str, int]:
    """Word frequencies of language ``code`` ("pt", "en") from the lists pyspellchecker ships
    (counted on film subtitles; no download), as written, accents kept."""
    import gzip
    import json
    from importlib.resources import files

    raw = files("spellchecker").joinpath("resources", f"{code}.json.gz").read_bytes()
    counts: dict[str, int] = json.loads(gzip.decompress(raw))
    return counts


@functools.cache
def common_words(lang: Lang, n: int = 2000) -> frozenset[str]:
    """The ``n`` most frequent words of ``lang`` (accents folded), by the word frequencies
    pyspellchecker ships (counted on film subtitles: "acha", "errado", "jeito", "rápido"),
    read once per process (about 0.5 s)."""
    import unicodedata

    counts = word_counts_shipped(lang)
    top = sorted(counts, key=lambda w: -counts[w])[:n]
    return frozenset("".join(ch for ch in unicodedata.normalize("NFD", w.lower())
                             if unicodedata.category(ch) != "Mn") for w in top)
