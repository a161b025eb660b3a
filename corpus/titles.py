"""A lecture whose title names what a question asks about comes first.

Students ask short questions about a lecture's subject as its title names it ("o que é o
teorema do limite central?", "o que é a lei de snell?"), and the windows that say the words
most are often in another lecture that uses them in passing: the Central Limit Theorem
question found "Uma bela razão pela qual Gaussiano + Gaussiano = Gaussiano" first and the
lecture titled "Mas o que é o Teorema do Limite Central?" third. So when every word of the
question (its asking words aside) is a word of one lecture's title (or of two or three), that
lecture's best window among the hits comes first, the order otherwise kept. A longer question,
or one whose words many titles hold ("o que é a derivada?"), is left as it was. Words are
compared as BM25 reads them (stop words out, Snowball stems, accents folded).

Titles and ids also number lectures ("FastAPI do Zero (2025), aula 04 (ao vivo)", `aula-04`,
"Capítulo 14"): a request to sum up "a aula 4" names the one lecture with that number.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from corpus.bm25 import tokenize
from corpus.text import fold

ASKING = frozenset(tokenize(
    "significa significado quer dizer diz explica explicar explique funciona funcionam "
    "exatamente afinal intuitivamente ideia conceito definição mean means meaning explain "
    "exactly work works idea concept definition"))
"""Words that ask rather than name a subject ("o que significa", "como funciona")."""


_NUMBERED = re.compile(r"\b(aulas?|lectures?|class|videos?|capitulos?|cap|chapters?|episodios?|"
                       r"episodes?|ep|partes?|parts?)\.?\s*(?:n[o.]?\s*)?0*(\d{1,3})\b")
_KIND = {"aula": "aula", "aulas": "aula", "lecture": "aula", "lectures": "aula", "class": "aula",
         "video": "video", "videos": "video", "capitulo": "cap", "capitulos": "cap", "cap": "cap",
         "chapter": "cap", "chapters": "cap", "episodio": "ep", "episodios": "ep",
         "episode": "ep", "episodes": "ep", "ep": "ep", "parte": "parte", "partes": "parte",
         "part": "parte", "parts": "parte"}


def numbered(text: str) -> set[tuple[str, int]]:
    """The numbered lectures ``text`` names ("resume a aula 4", "FastAPI do Zero (2025), aula
    04 (ao vivo)", the id "aula-04", "Capítulo 14"): (kind, number), kinds of one family read as
    one ("aula", "lecture", "class"; "capítulo", "chapter")."""
    spaced = re.sub(r"[-_/]", " ", fold(text))
    return {(_KIND[m.group(1)], int(m.group(2))) for m in _NUMBERED.finditer(spaced)}


@dataclass(frozen=True)
class Titles:
    """Each lecture's title words, to find the few lectures a question's words all belong to,
    and the numbers its title or id gives it ("aula 04"), to find the one a student names."""

    words: Mapping[str, frozenset[str]]
    numbers: Mapping[str, frozenset[tuple[str, int]]]

    @classmethod
    def of(cls, titles: Mapping[str, str]) -> Titles:
        """From each lecture id's title."""
        return cls({lecture: frozenset(tokenize(title)) for lecture, title in titles.items()},
                   {lecture: frozenset(numbered(f"{lecture} {title}"))
                    for lecture, title in titles.items()})

    def by_number(self, question: str) -> str | None:
        """The one lecture whose title or id gives it a number ``question`` names ("resume a
        aula 4" -> "aula-04"), else None (no number named, or several lectures with it: the
        "Capítulo 4" of three series)."""
        asked = numbered(question)
        if not asked:
            return None
        found = [lecture for lecture, nums in self.numbers.items() if asked & nums]
        return found[0] if len(found) == 1 else None

    def named(self, question: str) -> frozenset[str]:
        """The lectures whose titles hold every word of ``question`` but its asking words, when
        there are at most ``MOST_NAMED``; else none (no word left, no such title, or a word
        many titles hold)."""
        asked = set(tokenize(question)) - ASKING
        if not asked:
            return frozenset()
        found = frozenset(lecture for lecture, words in self.words.items() if asked <= words)
        return found if len(found) <= MOST_NAMED else frozenset()


MOST_NAMED = 3
"""Titles that may share a question's words ("o que é uma convolução?": "Mas o que é uma
convolução?" and "Convoluções | Por que X + Y em probabilidade é uma bela bagunça"), the best
hit among them first; over it ("o que é uma derivada?", four titles) the words name no lecture.
Chosen on the rule's fitting questions: one title only 31 of 40 first, up to two or three 33,
four 33 with one more moved."""

H = TypeVar("H")


def titled_first(hits: Sequence[H], lectures: Collection[str], lecture_of: Callable[[H], str]
                 ) -> list[H]:
    """``hits`` with the first hit of any of ``lectures`` brought to the front (as they are
    when none of them has a hit)."""
    at = next((i for i, h in enumerate(hits) if lecture_of(h) in lectures), None)
    if not at:
        return list(hits)
    return [hits[at], *hits[:at], *hits[at + 1:]]
