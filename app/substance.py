"""Does an answer say anything the question did not? And the lecture's own words when it doesn't.

The embedded 1.5B generator often hands the question back with a citation and nothing else:
"O número de colisões dos blocos dá os dígitos de pi é [1].", "A resposta é [1, 2]." On 37
questions of the answer bench's fitting half and a dozen new ones, 11 answers carried fewer than
four content words beyond the question's (``bench/answer_quality.py`` prints the share). The
passages had the answer; the student got nothing. So, pure functions over plain text:

- a sentence that adds no content word to the question's is a restatement and is dropped;
- when what is left adds fewer than ``MIN_NEW_WORDS``, the answer gets the passage it cites
  (else the first), quoted, with its citation: the lecture's own words, which the claim
  checker can confirm and the link opens at.

Content words are the search's: Portuguese stems, accents folded, stop words dropped
(``corpus.bm25.tokenize``), so "autovetores" in the answer and "autovetor" in the question match.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.citations import MARKER_RE, cited_numbers, sentence_spans
from corpus.bm25 import tokenize
from corpus.context import cut, squash
from corpus.query import fold

MIN_NEW_WORDS = 4
"""Content words beyond the question's an answer needs to count as saying something (chosen on
the fitting half of the answer bench and new questions, never on its test half)."""

QUOTE_CHARS = 500
"""At most this much of the passage is quoted."""

_META = ("resposta responder pergunta trecho trechos aula aulas video vídeo explicado explica "
         "answer question excerpt passage lecture lectures explained")
"""Words about the answer rather than the subject ("A resposta é [1].") add nothing."""

_POLARITY = frozenset({"nao", "sim", "nunca", "jamais", "nenhum", "nenhuma", "yes", "not",
                       "never", "none"})
"""Stop words that answer a yes/no question ("Não é comutativa."): they count as content."""

_LEAD = {
    "pt": "Trecho da aula que responde: “{text}” [{n}]",
    "en": "The lecture passage that answers (in the lecture's words): “{text}” [{n}]",
}


@dataclass(frozen=True)
class Substance:
    """What was made of an answer: its text, how many content words it adds to the question,
    how many restating sentences were dropped and whether a passage was quoted."""

    text: str
    new_words: int
    dropped: int = 0
    quoted: int | None = None
    """The passage number quoted (1-based), None when the answer stood on its own."""


def _words(text: str) -> list[str]:
    text = MARKER_RE.sub(" ", text)
    meta = set(tokenize(_META))
    polar = [w for w in (fold(x) for x in re.findall(r"\w+", text)) if w in _POLARITY]
    return [w for w in dict.fromkeys([*polar, *tokenize(text)]) if w not in meta]


def new_words(text: str, question: str) -> list[str]:
    """The answer's content words (stems) the question does not have, in order, once each."""
    asked = set(tokenize(question))
    return [w for w in _words(text) if w not in asked]


def with_substance(text: str, question: str, passages: Sequence[str], lang: str,
                   *, min_new: int = MIN_NEW_WORDS, quote_chars: int = QUOTE_CHARS) -> Substance:
    """``text`` without the sentences that only restate ``question``, and with the cited passage
    quoted when what is left adds fewer than ``min_new`` content words. ``passages``: the texts
    the answer's ``[n]`` markers number (1-based)."""
    asked = set(tokenize(question))
    kept: list[str] = []
    dropped = 0
    for a, b in sentence_spans(text):
        sentence = text[a:b]
        if any(w not in asked for w in _words(sentence)):
            kept.append(sentence)
        else:
            dropped += 1
    body = " ".join(kept)
    added = len(new_words(body, question))
    if added >= min_new or not passages:
        return Substance(body if dropped else text.strip(), added, dropped)
    cited = [n for n in cited_numbers(text) if 1 <= n <= len(passages)]
    n = cited[0] if cited else 1
    quote = _LEAD.get(lang, _LEAD["pt"]).format(text=cut(squash(passages[n - 1]), quote_chars),
                                                n=n)
    return Substance(f"{body} {quote}".strip(), added, dropped, n)
