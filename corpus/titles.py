"""A lecture whose title names what a question asks about comes first.

Students ask short questions about a lecture's subject as its title names it ("o que é o
teorema do limite central?", "o que é a lei de snell?"), and the windows that say the words
most are often in another lecture that uses them in passing: the Central Limit Theorem
question found "Uma bela razão pela qual Gaussiano + Gaussiano = Gaussiano" first and the
lecture titled "Mas o que é o Teorema do Limite Central?" third. So when every word of the
question (its asking words aside) is a word of exactly one lecture's title, that lecture's best
window among the hits comes first, the order otherwise kept. A longer question, or one whose
words several titles hold ("o que é a derivada?"), is left as it was. Words are compared as
BM25 reads them (stop words out, Snowball stems, accents folded).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    """Each lecture's title words, to find the one lecture a question's words all belong to."""

    words: Mapping[str, frozenset[str]]

    @classmethod
    def of(cls, titles: Mapping[str, str]) -> Titles:
        """From each lecture id's title."""
        return cls({lecture: frozenset(tokenize(title)) for lecture, title in titles.items()})

    def named(self, question: str) -> str | None:
        """The one lecture whose title holds every word of ``question`` but its asking words,
        else None (no word left, no such title, or several)."""
        asked = set(tokenize(question)) - ASKING
        if not asked:
            return None
        found = [lecture for lecture, words in self.words.items() if asked <= words]
        return found[0] if len(found) == 1 else None


H = TypeVar("H")


def titled_first(hits: Sequence[H], lecture: str | None, lecture_of: Callable[[H], str]
                 ) -> list[H]:
    """``hits`` with the first of ``lecture``'s brought to the front (as they are when
    ``lecture`` is None or has no hit)."""
    at = next((i for i, h in enumerate(hits) if lecture is not None and lecture_of(h) == lecture),
              None)
    if not at:
        return list(hits)
    return [hits[at], *hits[:at], *hits[at + 1:]]
