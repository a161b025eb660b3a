"""Check stage: each answer sentence read against the passage it cites, and what a student must
not get through an answer (a link, an address or a command its passage does not say)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from answer.citations import (
    MARKER_RE,
    cite_also,
    cited_numbers,
    repoint,
    sentence_spans,
    video_link,
)
from answer.evidence import passage_block
from answer.outlinks import foreign_links
from answer.replies import SentenceCheck
from answer.substance import quoted_spans
from corpus.bm25 import tokenize
from corpus.context import Passage, numbered, said_at, squash
from eval.claims import SUPPORT_AT, claim_messages, yes_probability

log = logging.getLogger(__name__)

MOVE_MARGIN = 0.1
"""How much more another passage must confirm a sentence than the one it cites to take its
citation (``postcheck``)."""


def shared_words(sentence: str, texts: Sequence[str]) -> float:
    """The share of ``sentence``'s content words (BM25's: stems, accents folded, stop words
    dropped) that ``texts`` say."""
    words = set(tokenize(sentence))
    if not words:
        return 0.0
    said = {w for t in texts for w in tokenize(t)}
    return len(words & said) / len(words)


def _said(claim: str, passages: Sequence[Passage], cites: Sequence[int]
          ) -> tuple[float | None, str]:
    """Where the first cited passage says ``claim``, and the video link there."""
    if not cites:
        return None, ""
    passage = passages[cites[0] - 1]
    at = said_at(claim, passage)
    return (None, "") if at is None else (at, video_link(passage.hit.url, at))


def without_foreign_links(text: str, passages: Sequence[str]) -> str:
    """``text`` without the sentences that carry a link, an e-mail address or a command that
    the passages they cite do not say (``answer.outlinks``): a transcript, or a prompt, telling
    students to log in somewhere or run something does not reach them through the answer.
    A sentence citing nothing is read against no passage. The lecture's quoted words stay."""
    quotes = quoted_spans(text)
    out, dropped = text, False
    for a, b in reversed(sentence_spans(text)):
        if any(a < qb and qa < b for qa, qb in quotes):
            continue
        sentence = text[a:b]
        cited = [passages[n - 1] for n in cited_numbers(sentence) if 1 <= n <= len(passages)]
        foreign = foreign_links(MARKER_RE.sub("", sentence), cited)
        if foreign:
            log.warning("answer sentence dropped: it carries %s, which its passage does not say",
                        ", ".join(foreign))
            out, dropped = out[:a] + out[b:], True
    return re.sub(r"[ \t]{2,}", " ", out).strip() if dropped else text


def drop_unsupported(text: str, checks: Sequence[SentenceCheck]) -> str:
    """``text`` without the sentences the post-check found unsupported; everything else
    (a quote of the lecture, which is not checked, included) stays as it was."""
    for c in checks:
        if c.supported is False:
            text = text.replace(c.text, "", 1)
    return re.sub(r"[ \t]{2,}", " ", re.sub(r"[ \t]+\n", "\n", text)).strip()


def postcheck(llm: Any, text: str, passages: Sequence[Passage]
              ) -> tuple[str, list[SentenceCheck]]:
    """Each answer sentence against the passages it cites (first-token P(SIM)); one that
    cites none, against the passages the generator read until one confirms it (the
    generator often leaves its first, central sentence uncited: "O bitcoin evita gasto
    duplo porque ..."). The lecture's words it quotes are not checked.

    A sentence its cited passages do not confirm is read against the other passages, in
    order, and cites the first that confirms it instead: the small generator sometimes
    numbers the wrong passage (the demo's "a mais usada hoje é a ReLU [2]" linked to the
    minute about overfitting while passage 1 says it), and the student follows the link.
    Only a clear case moves: that passage confirms it by ``MOVE_MARGIN`` more than the
    cited one and says more of its words (``shared_words``); the 1.5B model's P of two
    passages that both touch the sentence differ by noise (0.80 against 0.83 on the
    answer bench). An uncited sentence that a passage confirms cites it ("every claim
    cited": the generator left 1 of 2 sentences of "o que é o gradiente descendente ...?"
    uncited, and a passage confirmed it at P 0.99). Returns the text with such citations
    moved or added, and the checks."""
    ask = _asker(llm)
    out: list[SentenceCheck] = []
    fixes: list[tuple[int, int, str]] = []
    quotes = quoted_spans(text)
    for a, b in sentence_spans(text):
        if any(a < qb and qa < b for qa, qb in quotes):
            continue  # the lecture's own words, quoted: nothing to confirm
        sentence = text[a:b]
        cites = [n for n in cited_numbers(sentence) if 1 <= n <= len(passages)]
        claim = squash(MARKER_RE.sub("", sentence))
        if len(claim) < MIN_CLAIM_CHARS or not passages:
            out.append(SentenceCheck(sentence, cites, None, None))
            continue
        read = (_recheck_cited if cites else _cite_uncited)(ask, sentence, claim, cites, passages)
        if read.sentence != sentence:
            fixes.append((a, b, read.sentence))
        at, url = _said(claim, passages, read.cites)
        p = read.p
        out.append(SentenceCheck(read.sentence, read.cites, None if p is None else round(p, 4),
                                 None if p is None else p >= SUPPORT_AT, read.was, at, url))
    for a, b, moved in reversed(fixes):
        text = text[:a] + moved + text[b:]
    return text, out


MIN_CLAIM_CHARS = 12
"""A sentence shorter than this ("Sim [1].") says nothing to confirm."""

Ask = Callable[[str, str], "float | None"]


@dataclass(frozen=True)
class _Read:
    """A sentence after its check: its text and citations (moved or added), the passage's P,
    and what it cited before (None: unchanged; []: nothing)."""

    sentence: str
    cites: list[int]
    p: float | None
    was: list[int] | None = None


def _asker(llm: Any) -> Ask:
    def ask(block: str, claim: str) -> float | None:
        reply, probs = llm.first_token(claim_messages(claim, block))
        return yes_probability(reply, probs)
    return ask


def _recheck_cited(ask: Ask, sentence: str, claim: str, cites: list[int],
                   passages: Sequence[Passage]) -> _Read:
    """A cited sentence against its passages; when they do not confirm it, the first other
    passage that clearly does (``MOVE_MARGIN`` more, more of its words) takes the citation."""
    texts = [passages[n - 1].text for n in cites]
    block = passage_block(texts[0]) if len(texts) == 1 else numbered(
        texts, sum(len(t) for t in texts) + BLOCK_MARGIN_CHARS)
    p = ask(block, claim)
    if p is not None and p >= SUPPORT_AT:
        return _Read(sentence, cites, p)
    said = shared_words(claim, texts)
    for n, q in enumerate(passages, 1):
        if n in cites:
            continue
        x = ask(passage_block(q.text), claim)
        if (x is not None and x >= SUPPORT_AT and x >= (p or 0.0) + MOVE_MARGIN
                and shared_words(claim, [q.text]) > said):
            return _Read(repoint(sentence, [n]), [n], x, cites)
    return _Read(sentence, cites, p)


def _cite_uncited(ask: Ask, sentence: str, claim: str, cites: list[int],
                  passages: Sequence[Passage]) -> _Read:
    """An uncited sentence against each passage on its own (the server's cache has read each
    already) until one confirms it, which then gets the citation: the student has a link for
    it, and the claim a source."""
    ps: list[float] = []
    for n, q in enumerate(passages, 1):
        x = ask(passage_block(q.text), claim)
        if x is not None:
            ps.append(x)
            if x >= SUPPORT_AT:
                return _Read(cite_also(sentence, [n]), [n], x, [])
    return _Read(sentence, cites, max(ps) if ps else None)


BLOCK_MARGIN_CHARS = 50
"""Room for the numbering when several cited passages are read as one block."""
