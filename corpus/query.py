"""Questions as students type them, rewritten into the words the transcripts use.

Two rewrites, both pure and cheap: chat abbreviations expanded ("pq" -> "por que", "vc" ->
"você"), and words typed without their accents given back the spelling the lectures use
("funcao" -> "função", "neuronio" -> "neurônio", and "funçao", typed with the cedilla
but not the tilde, as phone keyboards leave it), read off the corpus' own vocabulary so that
nothing is guessed from outside it. Each was measured on the retrieval bench
(``bench/retrieval_quality.py``) and kept because it helped the dense retriever; BM25 folds
accents itself and gets the same rewritten text.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

_WORD = re.compile(r"\w+", re.UNICODE)

ABBREVIATIONS: dict[str, str] = {
    "pq": "por que", "pqp": "por que", "porq": "por que", "vc": "você", "vcs": "vocês",
    "q": "que", "oq": "o que", "tb": "também", "tbm": "também", "hj": "hoje", "msm": "mesmo",
    "n": "não", "nao": "não", "td": "tudo", "tds": "todos", "mt": "muito", "mto": "muito",
    "mta": "muita", "mtos": "muitos", "dps": "depois", "qdo": "quando", "qnd": "quando",
    "qndo": "quando", "ngm": "ninguém", "cmg": "comigo", "blz": "beleza", "pra": "para",
    "pro": "para o", "eh": "é", "ta": "está", "tá": "está", "tava": "estava", "ñ": "não",
    "vdd": "verdade", "cm": "como", "qto": "quanto",
    "qts": "quantos", "qtos": "quantos", "fds": "fim de semana", "obg": "obrigado",
    "mds": "meu deus", "sla": "sei lá", "tlgd": "tá ligado", "agr": "agora", "ent": "então",
    "entao": "então", "tmb": "também", "pfv": "por favor", "pls": "por favor",
    "dnv": "de novo", "smp": "sempre", "ctz": "certeza", "qlqr": "qualquer",
    "qualqr": "qualquer", "neh": "né", "qtd": "quantidade", "qtde": "quantidade",
}
"""Chat spellings of Brazilian students and what they stand for. Only whole words are
replaced, and only lower-case ones, so "Q" in "matriz Q" stays a letter."""


def fold(word: str) -> str:
    """Lower case without accents."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def accent_map(texts: Iterable[str], min_count: int = 2) -> dict[str, str]:
    """For every accented word of ``texts``: its unaccented lower-case form -> the spelling
    the texts use most. Words seen fewer than ``min_count`` times (ASR slips) are left out, and
    so is a form the texts also use without accents more often (e.g. "e" vs "é")."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(w.lower() for w in _WORD.findall(text))
    best: dict[str, tuple[int, str]] = {}
    for word, n in counts.items():
        if n < min_count:
            continue
        key = fold(word)
        if key not in best or n > best[key][0]:
            best[key] = (n, word)
    return {k: w for k, (_, w) in best.items() if w != k}


_EN_WORDS = frozenset(
    "the a an is are was were what why how does do did of to in on for with that this it and "
    "or be can you i my when which where there their from by as at not".split())
_PT_WORDS = frozenset(
    "o a os as um uma é são que por porque como qual quais de do da dos das em no na nos nas "
    "para pra com não se eu meu minha quando onde isso esse essa ele ela pq vc q oq".split())


def looks_english(question: str) -> bool:
    """More English function words than Portuguese ones: chat abbreviations are not expanded
    ("n" and "pro" mean other things there)."""
    words = [w.lower() for w in _WORD.findall(question)]
    return sum(w in _EN_WORDS for w in words) > sum(w in _PT_WORDS for w in words)


class QueryRewriter:
    """Rewrites a question before it is embedded and searched."""

    def __init__(self, accents: dict[str, str] | None = None, *, abbreviations: bool = True
                 ) -> None:
        self.accents = accents or {}
        self.abbreviations = abbreviations

    @classmethod
    def for_corpus(cls, texts: Iterable[str]) -> QueryRewriter:
        return cls(accent_map(texts))

    def __call__(self, question: str) -> str:
        expand = self.abbreviations and not looks_english(question)

        def swap(match: re.Match[str]) -> str:
            word = match.group(0)
            if expand and word in ABBREVIATIONS:
                return ABBREVIATIONS[word]
            lowered = word.lower()
            if lowered == word:  # "funçao", typed with the cedilla but not the tilde, too
                return self.accents.get(fold(lowered), word)
            return word

        return _WORD.sub(swap, question)
