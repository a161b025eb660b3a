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
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from corpus.bm25 import tokenize

ASKING = frozenset(tokenize(
    "significa significado quer dizer diz explica explicar explique funciona funcionam "
    "exatamente afinal intuitivamente ideia conceito definição mean means meaning explain "
    "exactly work works idea concept definition"))
"""Words that ask rather than name a subject ("o que significa", "como funciona")."""


@dataclass(frozen=True)
class Titles:
    """Each lecture's title words, to find the few lectures a question's words all belong to."""

    words: Mapping[str, frozenset[str]]

    @classmethod
    def of(cls, titles: Mapping[str, str]) -> Titles:
        """From each lecture id's title."""
        return cls({lecture: frozenset(tokenize(title)) for lecture, title in titles.items()})

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
