"""Does an answer say anything the question did not? And the lecture's own words when it doesn't.

The embedded 1.5B generator often hands the question back with a citation and nothing else:
"O número de colisões dos blocos dá os dígitos de pi é [1].", "A resposta é [1, 2]." On 37
questions of the answer bench's fitting half and a dozen new ones, 11 answers carried fewer than
four content words beyond the question's (``bench/answer_quality.py`` prints the share). The
passages had the answer; the student got nothing. So, pure functions over plain text:

- a sentence that adds no content word to the question's, or says again what an earlier one
  said, is dropped, and one that loops (the same five words a third time) is cut there;
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
from functools import lru_cache

from app.citations import MARKER_RE, cite_also, cited_numbers, sentence_spans
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


@lru_cache(maxsize=1)
def _meta() -> frozenset[str]:
    return frozenset(tokenize(_META))


def _words(text: str) -> list[str]:
    """Content words (stems) once each, in order: yes/no words count, words about the answer
    itself do not."""
    text = MARKER_RE.sub(" ", text)
    meta = _meta()
    polar = [w for w in (fold(x) for x in re.findall(r"\w+", text)) if w in _POLARITY]
    return [w for w in dict.fromkeys([*polar, *tokenize(text)]) if w not in meta]


def _starts_sentence(text: str) -> bool:
    return text[:1].isupper() or text[:1] in "[“\"'(" or text[:1].isdigit()


def new_words(text: str, question: str) -> list[str]:
    """The answer's content words (stems) the question does not have, in order, once each."""
    asked = set(_words(question))
    return [w for w in _words(text) if w not in asked]


LOOP_WORDS = 5
"""A run of this many words said a third time in one sentence is a loop (greedy decoding's
failure: "R0 é a probabilidade de uma pessoa infectada por outra, dividida pela probabilidade
de uma pessoa infectada por outra, dividida pela ..."); twice can be a comparison."""


def unloop(sentence: str, n: int = LOOP_WORDS) -> str:
    """``sentence`` cut where a run of ``n`` words starts for the third time (back to the comma
    before it), its citation markers kept."""
    words = list(re.finditer(r"\S+", sentence))
    seen: dict[tuple[str, ...], list[int]] = {}
    for i in range(len(words) - n + 1):
        key = tuple(fold(w.group(0)).strip(",.;:") for w in words[i : i + n])
        starts = seen.setdefault(key, [])
        if starts and i - starts[-1] < n:
            continue  # overlapping itself ("a a a a a a"): not a new occurrence
        starts.append(i)
        if len(starts) == 3:
            head = sentence[: words[i].start()]
            clause = head.rfind(",", words[starts[1] + n - 1].end())
            head = (head[:clause] if clause > 0 else head).rstrip(" ,;:")
            marks = " ".join(m.group(0) for m in MARKER_RE.finditer(sentence[words[i].start():]))
            return f"{head}…" + (f" {marks}" if marks else "")
    return sentence


def with_substance(text: str, question: str, passages: Sequence[str], lang: str,
                   *, min_new: int = MIN_NEW_WORDS, quote_chars: int = QUOTE_CHARS) -> Substance:
    """``text`` without the sentences that only restate ``question`` or an earlier sentence
    (a loop inside a sentence cut off), and with the cited passage quoted when what is left
    adds fewer than ``min_new`` content words. ``passages``: the texts the answer's ``[n]``
    markers number (1-based)."""
    asked = set(_words(question))
    kept: list[str] = []
    said: list[set[str]] = []
    dropped = 0
    spans = sentence_spans(text)
    for k, (a, b) in enumerate(spans):
        sentence = unloop(text[a:b])
        words = set(_words(sentence))
        # a chunk that ends mid-sentence ("1 + 1/4 + ... da pi²/6") is not a sentence to drop
        whole = k + 1 == len(spans) or _starts_sentence(text[spans[k + 1][0]:])
        again = next((j for j, before in enumerate(said) if words <= before), None)
        if not whole or (words - asked and again is None):
            kept.append(sentence)
            said.append(words)
            continue
        dropped += 1
        if again is not None:  # the claim stands once, cited by every passage that made it
            kept[again] = cite_also(kept[again], cited_numbers(sentence))
    body = " ".join(kept)
    changed = dropped or body != " ".join(text[a:b] for a, b in spans)
    added = len(new_words(body, question))
    if added >= min_new or not passages:
        return Substance(body if changed else text.strip(), added, dropped)
    cited = [n for n in cited_numbers(text) if 1 <= n <= len(passages)]
    n = cited[0] if cited else 1
    quote = _LEAD.get(lang, _LEAD["pt"]).format(text=cut(squash(passages[n - 1]), quote_chars),
                                                n=n)
    return Substance(f"{body} {quote}".strip(), added, dropped, n)
