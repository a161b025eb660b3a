"""The evidence check: does a retrieved passage answer the question? Decided before generation.

Each of the top candidates, focused to the sentences around the answer (``corpus.context``), is
put to the LLM as a yes/no question, and P(SIM) is read from the first token's logprobs
(``LLMClient.first_token``, as the claim checker does). The prompt has the claim checker's shape
(same system text, the passage first), so when the answer's sentences are checked afterwards
against the same passage, a server with a prompt cache (llama.cpp) reads the passage once.

``Gate`` turns the probabilities and the retrieval scores into a decision with thresholds fitted
by ``aula fit-gate`` on a labelled question set (``fit``) and stored as JSON (``answer/gate.json``
ships the ones fitted on our bench's fitting half with the embedded model):

- covered when the best P(SIM) reaches ``p_covered`` and the top retrieval score ``min_score``;
- the passages that go to the generator are those with P(SIM) from ``p_pass`` (the best one
  always), best first.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from answer.glossary import portuguese_words
from corpus.bm25 import stem
from corpus.context import Passage, numbered
from corpus.errors import InputError
from corpus.jsonlines import read_objects
from corpus.language import STOPWORDS, common_words, detect_language
from corpus.rerank import ScoreReranker
from corpus.text import fold
from eval.claims import SYSTEM, yes_probability
from eval.fitting import balanced_accuracy as _balanced
from eval.fitting import select_logistic
from eval.logistic import Logistic, json_object, number

DEFAULT_GATE_FILE = Path(__file__).with_name("gate.json")
STRICT_GATE_FILE = Path(__file__).with_name("gate_strict.json")
"""``AULA_GATE_FILE=strict``: the default's signals fitted on the same questions with course
logistics included, answering only from the P(covered) at which none of the fitting questions
the lectures do not cover is answered (``aula fit-gate --strict``, ``min_p`` 0.6); declines
more questions on neighbouring subjects, and more answerable ones too, and never answers what
the default declines."""
ADAPTED_GATE_FILE = Path(__file__).with_name("gate_adapted.json")
"""``AULA_GATE_FILE=adapted``, the default where the index has a course-adapted model: the
default's signals and the adapted model's ``adapted_z`` (``corpus.adapt.signals``), fitted on
the fitting questions of two courses, each over its own adapted model."""

GATE_USER = (
    "TEXTO (transcrição de uma aula):\n{contexts}\n\n"
    "PERGUNTA DE UM ESTUDANTE: {question}\n\n"
    "O TEXTO explica o que a PERGUNTA pede? Responda SIM ou NÃO."
)

FirstToken = Callable[[list[dict[str, str]]], tuple[str, Mapping[str, float] | None]]


def passage_block(text: str) -> str:
    """A passage as the gate and the claim checker show it (identical, for the prompt cache)."""
    return numbered([text], max(len(text), 1) + 10)


def gate_messages(question: str, passage_text: str) -> list[dict[str, str]]:
    user = GATE_USER.format(contexts=passage_block(passage_text), question=question.strip())
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def check_passages(
    ask: FirstToken, question: str, passages: Sequence[Passage]
) -> list[float | None]:
    """P(the passage answers the question) for each passage; None when unreadable.

    Errors of ``ask`` (``LLMError``) propagate: the caller degrades to the evidence-only reply.
    """
    return check_texts(ask, question, [p.text for p in passages])


def check_texts(ask: FirstToken, question: str, texts: Sequence[str]) -> list[float | None]:
    """P(the text answers the question) for each text (the gate's prompt and reading)."""
    out: list[float | None] = []
    for text in texts:
        reply, probs = ask(gate_messages(question, text))
        out.append(yes_probability(reply, probs))
    return out


def llm_reranker(ask: FirstToken) -> ScoreReranker:
    """The retriever's LLM rerank: hits reordered by the same P(SIM) the gate reads."""
    return ScoreReranker("llm", lambda question, texts: check_texts(ask, question, texts))


_STUDENT_WORDS = frozenset(
    "pq porque oq q vc voce voces tb tbm hj qdo qnd qual quais como onde quando entao entender "
    "entendi aula aulas professor video videos explica explicar explique sobre alguem pode "
    "gente seria fazer faz funciona isso esse essa pra para com sem mais menos muito qual "
    # "meu prof", "resume o vídeo", and "embaixo" where the lectures say "abaixo"
    # or "sob" ("a área embaixo do gráfico", "aquele n! embaixo")
    "prof profe profa resume resuma resumir resumo embaixo "
    "what when where which does have that this with from about explain video lecture".split()
)


def asks_nothing(question: str) -> bool:
    """Whether ``question`` names no subject at all ("?", "pq", "oq é isso", "why?"): no word
    beyond stop words and the words students frame a question with. ``term_coverage`` of such
    a question is vacuous (1.0) and its retrieval scores look like a real question's, so the
    gate let "?" and "pq" through to an answer about whatever window came first ("Porque a
    fórmula quadrática mais simples é ótima, era assim que eu queria encerrar o stream")."""
    return not _content_words(question)


def _content_words(question: str) -> list[str]:
    """``question``'s words, accents folded, without stop words (Portuguese and English) and
    the words students frame a question with."""
    stop = STOPWORDS["pt"] | STOPWORDS["en"]
    return [w for w in re.findall(r"[a-z0-9]+", fold(question))
            if w not in stop and w not in _STUDENT_WORDS]


COMMON_WORDS = 2000
"""A Portuguese question's words among the language's 2,000 most frequent do not count in
``term_coverage`` (see there)."""


def term_coverage(question: str, texts: Sequence[str],
                  rare: Callable[[str], bool] | None = None) -> float:
    """Share of the question's content words (4+ letters, not stop words) that the retrieved
    windows contain (a 5-letter prefix match, accent-blind): the terms of a question about
    another subject ("tcp", "dataframe") are missing from the lectures altogether.

    In a Portuguese question, words among the language's most frequent (``COMMON_WORDS``:
    "acha", "errado", "jeito", "rápido") do not count either: a student says them, the lecture
    at the answer need not ("o que é o hamming code e como ele acha o bit errado" found 1 of 4
    words in windows all about Hamming codes, and was declined). Measured on the gate bench's
    fitting halves before it was taken: Portuguese answerable questions answered 1.0 → 1.0,
    neighbouring subjects declined 0.65 → 0.75. English questions keep every word: there the
    frequent words are the subject's own ("loss", "model", "network", "layer"), and dropping
    them declined more answerable questions of the English fitting half.

    A Portuguese word also counts when the windows say it in another form (the same Snowball
    stem, ``corpus.bm25.stem``): a student's verb is rarely in the lecture's tense, nor an
    adjective in its gender ("sigmoide ainda é usada hj em dia ou todo mundo trocou por relu?"
    found half its words, the windows saying "usados", not "usada", and was declined). Measured
    with the shipped gate before it was taken (offline over the answer bench's 3b1b-pt
    index): the 60 held-out Portuguese questions answered 51 → 55, their lecture-mentioning
    rephrasings 51 → 52 (fitting 37 → 38 of 40); the gate bench's neighbouring subjects let
    through and course questions unchanged (fitting 5/20 and 0/8, test 11/20 and 0/7).

    A frequent word that the course itself says in few lectures or none (``rare``, the index's
    ``Retriever.said_in_few_lectures``) is the question's subject, not its phrasing, and counts:
    "qual a probabilidade no problema do aniversario" found every other word near a coin-flip
    passage and was answered with it; of 3b1b-pt's 126 lectures, one says "aniversário".
    Offline over the answer bench's index with the shipped gate (docs/answers.md):
    3 decisions changed on 412 Portuguese bench questions, all for the better."""
    pt = detect_language(question) == "pt"
    common = common_words("pt", COMMON_WORDS) if pt else frozenset()
    terms = {w for w in _content_words(question) if len(w) >= 4
             and (w not in common or (rare is not None and rare(w)))}
    if not terms:
        return 1.0
    words = set(re.findall(r"[a-z0-9]+", fold(" ".join(texts))))
    prefixes = {w[:5] for w in words if len(w) >= 5} | words
    stems = {stem(w) for w in words} if pt else set()

    def said(word: str) -> bool:  # a glossary's word: itself or its stem, not five letters
        return word in words or stem(word) in stems

    return sum(t[:5] in prefixes or (pt and (stem(t) in stems
                                             or any(map(said, portuguese_words(t)))))
               for t in terms) / len(terms)


FEATURES = ("best_p", "top_score", "top_unit", "best_sim", "term_cov", "idf_cov", "adapted_top",
            "adapted_z")
ADAPTED = frozenset({"adapted_top", "adapted_z"})
"""Signals of the course-adapted model (``corpus.adapt.signals``), measured only where the index
has one and the gate reads them."""
LEXICAL = frozenset({"term_cov", "idf_cov"})
"""Signals that read the question's words in the passages. A fitted gate reads at least one of
them beside a similarity or the LLM check: fitted on 3b1b-pt alone, a threshold on the E5
sentence similarity (leave-one-out 0.978, against 0.976 with ``idf_cov`` beside it) declined
the demo's own question over the sample lectures, whose answer is there word for word
(similarity 0.884 against a threshold of 0.892). A cosine's scale moves from corpus to corpus;
whether the question's specific words are in the passage does not."""


def features(question: str, passages: Sequence[Passage], probs: Sequence[float | None],
             hits: Sequence[Any],
             idf_coverage: Callable[[str, Sequence[str]], float] | None = None,
             rare: Callable[[str], bool] | None = None,
             adapted: Mapping[str, float] | None = None) -> dict[str, float]:
    """The signals the gate weighs, all known before generation (no extra LLM call).

    ``idf_cov`` (only with ``idf_coverage``, the index's ``Retriever.term_coverage``): the
    share of the question's idf mass that the best focused passage holds. A question on a
    neighbouring subject that the lectures do not teach ("regra de Sarrus", "transformada de
    Laplace") matches their common words, not its specific one. ``rare``: the index's
    ``Retriever.said_in_few_lectures``, read by ``term_cov`` (``term_coverage``).
    ``adapted``: the adapted model's signals of the question (``ADAPTED``), when read."""
    out = {
        "best_p": max((p for p in probs if p is not None), default=0.0),
        "top_score": max((float(h.score) for h in hits), default=0.0),
        "top_unit": top_unit(hits),
        "best_sim": max((p.similarity for p in passages), default=0.0),
        "term_cov": term_coverage(question, [h.text for h in hits], rare),
    }
    if idf_coverage is not None:
        out["idf_cov"] = idf_coverage(question, [p.text for p in passages])
    if adapted is not None:
        out.update(adapted)
    return out


def top_unit(hits: Sequence[Any]) -> float:
    """The best E5 cosine of a 30 s unit inside the hits (``Hit.unit_score``), or of a whole
    window where the index has no units.

    A window's cosine is diluted by the rest of its two minutes, and more for a short question:
    "o que é a regra de cramer?" reaches 0.853 with the Cramer's-rule lecture first, as low as
    questions on subjects the lectures never teach ("o que é a transformada z?" 0.879), while
    its best unit reaches 0.896 (0.880). Read by the shipped gate
    (docs/answers.md: held-out Portuguese questions on neighbouring subjects declined 0.45 ->
    0.80, answerable ones answered 1.0 -> 1.0)."""
    units = [float(h.unit_score) for h in hits if getattr(h, "unit_score", None) is not None]
    if units:
        return max(units)
    return max((float(h.score) for h in hits), default=0.0)


@dataclass(frozen=True)
class Decision:
    covered: bool
    order: list[int]
    """Indices of the passages for the prompt, in candidate order (empty when not covered)."""
    best_p: float | None
    reason: str
    p_covered: float | None = None
    """The gate's P(the lectures cover the question), when it is a fitted model."""
    by_fallback: bool = False
    """Covered by the fitted gate's fallback (every rare word of the question in the best
    passage), whose P is on another scale than the main model's."""
    quote_cut: float | None = None
    """The deciding gate's own P(covered) from which the quote strategy quotes
    (``Gate.quote_min_covered``); None: the configured cut, fitted on the default gate's scale."""

    @property
    def sure(self) -> float | None:
        """How sure the gate is that the lectures cover the question: its fitted P, else the
        evidence check's best P (None when neither was read)."""
        return self.p_covered if self.p_covered is not None else self.best_p


@dataclass
class Gate:
    """Fitted thresholds of the coverage decision (see the module's docstring)."""

    p_covered: float = 0.5
    min_score: float = 0.0
    p_pass: float = 0.5
    weights: dict[str, float] = field(default_factory=dict)
    """Logistic weights over ``FEATURES`` (with ``bias``): covered when P(covered) >= ``min_p``.
    Empty: the two thresholds ``p_covered`` and ``min_score`` decide."""
    bias: float = 0.0
    min_p: float = 0.5
    """The P(covered) of the logistic model from which a question is answered: 0.5 for the
    default gate; higher for a strict one (``aula fit-gate --strict``: the lowest at which no
    fitting question the lectures do not cover is answered)."""
    model: str = ""
    quote_min_covered: float | None = None
    """The P(covered) from which the quote strategy quotes with this gate (written by
    ``aula fit-gate --strict``: its own ``min_p``); None: ``AULA_QUOTE_MIN_COVERED``, fitted
    on the default gate's scale."""
    fitted: dict[str, Any] = field(default_factory=dict)
    fallback: dict[str, Any] = field(default_factory=dict)
    """A second logistic model (``weights``, ``bias``), read only for a question whose rare
    words are all in the best passage (``idf_cov`` >= ``min_idf_cov``) and whose content words
    are all in the windows (``term_cov`` >= ``min_term_cov``): it covers what the main model
    declines when it says covered. A cosine's scale moves from corpus to corpus, the question's
    words in the passage do not: on the sample lectures a passage that answers the demo's
    question word for word scores 0.874 for its best unit, under the main model's threshold
    (fitted on 3b1b-pt and karpathy-en). Empty: no fallback."""

    def p_covered_of(self, feats: Mapping[str, float]) -> float:
        return _model(self.weights, self.bias).p(feats)

    def fallback_p(self, feats: Mapping[str, float]) -> float | None:
        """The fallback's P(covered) when it applies to ``feats``, else None."""
        fb = self.fallback
        if not fb or "idf_cov" not in feats:
            return None
        if (float(feats["idf_cov"]) < float(fb.get("min_idf_cov", 1.0))
                or float(feats.get("term_cov", 0.0)) < float(fb.get("min_term_cov", 1.0))):
            return None
        return _model(fb.get("weights", {}), float(fb.get("bias", 0.0))).p(feats)

    @property
    def reads_idf(self) -> bool:
        """Whether deciding needs ``idf_cov`` (the index's word counts)."""
        return "idf_cov" in self.weights or bool(self.fallback)

    @property
    def reads_adapted(self) -> bool:
        """Whether deciding needs the course-adapted model's signals (``ADAPTED``)."""
        return any(k in ADAPTED for k in self.weights)

    @property
    def uses_llm(self) -> bool:
        """Whether deciding needs the LLM's evidence check (P(SIM) of each passage): the
        fitted model may leave it out when it did not help (``fit``)."""
        return "best_p" in self.weights if self.weights else True

    def decide(self, probs: Sequence[float | None], scores: Sequence[float],
               max_passages: int = 3, feats: Mapping[str, float] | None = None) -> Decision:
        """Covered or not, and which passages (indices into ``probs``) go to the generator,
        with this gate's own quote cut."""
        decision = self._decision(probs, scores, max_passages, feats)
        return replace(decision, quote_cut=self.quote_min_covered)

    def _decision(self, probs: Sequence[float | None], scores: Sequence[float],
                  max_passages: int, feats: Mapping[str, float] | None) -> Decision:
        readable = [(p, i) for i, p in enumerate(probs) if p is not None]
        pc: float | None
        if self.weights and feats is not None and not self.uses_llm:
            pc = self.p_covered_of(feats)
            why = ", ".join(f"{k}={float(feats.get(k, 0)):.2f}" for k in self.weights)
            reason = f"P(covered)={pc:.2f} ({why})"
            by_fallback = pc < self.min_p
            if by_fallback:
                reason = f"P(covered)={pc:.2f} < {self.min_p:.2f} ({why})"
                fb = self.fallback_p(feats)
                if fb is None or fb < self.min_p:
                    return Decision(False, [], None, reason, pc)
                pc = fb
                reason += (f", but every rare word of the question is in the best passage "
                           f"(idf_cov={float(feats['idf_cov']):.2f}): fallback P={fb:.2f}")
            return Decision(True, list(range(min(len(probs), max(1, max_passages)))), None,
                            reason, pc, by_fallback)
        if not readable:
            return Decision(False, [], None, "no candidate could be checked")
        best_p, best_i = max(readable, key=lambda pi: (pi[0], -pi[1]))
        top_score = max(scores) if scores else 0.0
        pc = None
        if self.weights and feats is not None:
            pc = self.p_covered_of(feats)
            if pc < self.min_p:
                shown = ", ".join(f"{k}={float(feats.get(k, 0)):.2f}" for k in self.weights)
                return Decision(False, [], best_p,
                                f"P(covered)={pc:.2f} < {self.min_p:.2f} ({shown})", pc)
        elif best_p < self.p_covered:
            return Decision(False, [], best_p,
                            f"best passage P={best_p:.2f} < {self.p_covered:.2f}")
        elif top_score < self.min_score:
            return Decision(False, [], best_p,
                            f"retrieval score {top_score:.3f} < {self.min_score:.3f}")
        ranked = sorted(readable, key=lambda pi: (-pi[0], pi[1]))
        chosen = [i for p, i in ranked if p >= self.p_pass or i == best_i][:max(1, max_passages)]
        order = sorted(chosen)  # in the candidates' own rank (P ranks them less well)
        return Decision(True, order, best_p, f"best passage P={best_p:.2f}", pc)

    # --- storage -----------------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "gate file") -> Gate:
        raw = json_object(text, source)
        unknown = sorted(set(raw) - set(cls.__dataclass_fields__))
        if unknown:
            raise InputError(f"{source}: unknown field {unknown[0]!r}")
        for name in ("p_covered", "min_score", "p_pass", "min_p"):
            if name in raw:
                number(raw, name, source)
        if raw.get("quote_min_covered") is not None:
            number(raw, "quote_min_covered", source)
        if "weights" in raw or "bias" in raw:  # the logistic model; no bias reads 0
            Logistic.from_dict({"weights": {}, "bias": 0.0, **raw}, source)
        if raw.get("fallback"):
            Logistic.from_dict({"bias": 0.0, **raw["fallback"]}, source, "fallback.")
        return cls(**raw)

    @classmethod
    def load(cls, path: Path | None = None) -> Gate:
        """The gate in ``path`` (``strict``, ``adapted``, ``default``: the shipped ones); without
        a path, the shipped default, or the unfitted thresholds if it is missing. A named file
        that does not exist is an error naming it, never a silent fallback."""
        if path is None:
            if not DEFAULT_GATE_FILE.exists():
                return cls()
            path = DEFAULT_GATE_FILE
        elif str(path) == "strict":
            path = STRICT_GATE_FILE
        elif str(path) == "adapted":
            path = ADAPTED_GATE_FILE
        elif str(path) == "default":
            path = DEFAULT_GATE_FILE
        if not path.is_file():
            raise InputError(f"gate file {path} (AULA_GATE_FILE) not found")
        return cls.from_json(path.read_text(encoding="utf-8"), str(path))


@functools.cache
def default_gate() -> Gate:
    """The shipped default gate, read once."""
    return Gate.load()


# --- fitting ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateSample:
    """One question of a fitting set: its candidates' P(SIM) and retrieval scores, whether it
    is answerable, and which candidates overlap its gold span (None when unknown)."""

    answerable: bool
    probs: list[float | None]
    scores: list[float]
    gold: list[bool] | None = None
    feats: dict[str, float] = field(default_factory=dict)
    qid: str = ""


def read_samples(path: Path) -> tuple[list[GateSample], str]:
    """The gate samples stored by ``aula fit-gate --samples`` and the LLM they were measured
    with; a file that is not JSON Lines raises one error naming it."""
    rows = [row for _, row in read_objects(path)]
    model = str(rows[0].get("model", "")) if rows else ""
    return [GateSample(**{k: v for k, v in r.items() if k != "model"}) for r in rows], model


def _candidates(values: Sequence[float]) -> list[float]:
    """Thresholds half-way between sorted distinct values, plus both ends."""
    xs = sorted(set(round(v, 6) for v in values))
    mids = [(a + b) / 2 for a, b in zip(xs, xs[1:], strict=False)]
    return [0.0, *mids, *(x + 1e-6 for x in xs[-1:])]


def fit(samples: Sequence[GateSample], model: str = "") -> Gate:
    """Thresholds that maximise balanced accuracy (answered when answerable, declined when
    not) on ``samples``; ties go to the widest margin (the middle of the best run)."""
    best_p = [max((p for p in s.probs if p is not None), default=0.0) for s in samples]
    top = [max(s.scores, default=0.0) for s in samples]
    truth = [s.answerable for s in samples]
    grid: list[tuple[float, float, float]] = []
    for ts in _candidates(top):
        for tp in _candidates(best_p):
            pred = [bp >= tp and sc >= ts for bp, sc in zip(best_p, top, strict=True)]
            grid.append((_balanced(list(zip(truth, pred, strict=True))), tp, ts))
    top_acc = max(g[0] for g in grid)
    winners = [g for g in grid if math.isclose(g[0], top_acc)]
    # Prefer no score floor when it does as well, then the median p threshold among winners.
    floor = min(w[2] for w in winners)
    winners = sorted(w for w in winners if w[2] == floor)
    acc, p_cov, min_score = winners[len(winners) // 2]
    pairs = [(g, p) for s in samples if s.gold for g, p in zip(s.gold, s.probs, strict=True)
             if p is not None]
    p_pass = p_pass_fit = p_cov
    pass_acc = None
    if pairs and any(g for g, _ in pairs) and not all(g for g, _ in pairs):
        scored = [(_balanced([(g, p >= t) for g, p in pairs]), t)
                  for t in _candidates([p for _, p in pairs])]
        pass_acc = max(a for a, _ in scored)
        ties = sorted(t for a, t in scored if math.isclose(a, pass_acc))
        p_pass_fit = ties[len(ties) // 2]
        p_pass = min(p_pass_fit, p_cov)  # threshold mode: a covered answer's best passes
    fitted: dict[str, Any] = {
        "questions": len(samples),
        "answerable": sum(truth),
        "threshold_balanced_accuracy": round(acc, 4),
        "passage_balanced_accuracy": None if pass_acc is None else round(pass_acc, 4),
    }
    gate = Gate(round(p_cov, 6), round(min_score, 6), round(p_pass, 6), model=model,
                fitted=fitted)
    if all(s.feats for s in samples) and 0 < sum(truth) < len(truth):
        lr, loo, table = _logistic(samples)
        gate.weights, gate.bias = dict(zip(lr.features, lr.weights, strict=True)), lr.bias
        fitted["selection"] = table
        # the passages that go to the generator: those whose P separates gold-span passages
        # from the rest (the best one always goes)
        gate.p_pass = round(p_pass_fit, 6)
        pred = [gate.p_covered_of(s.feats) >= 0.5 for s in samples]
        fitted["balanced_accuracy"] = round(_balanced(list(zip(truth, pred, strict=True))), 4)
        fitted["leave_one_out_balanced_accuracy"] = round(loo, 4)
    else:
        fitted["balanced_accuracy"] = round(acc, 4)
    return gate


STRICT_STEPS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def make_strict(gate: Gate, samples: Sequence[GateSample]) -> None:
    """Raise ``gate.min_p`` to the lowest of ``STRICT_STEPS`` at which its model answers none
    of the ``samples`` the lectures do not cover (the last step if each lets one through), and
    record what that costs on them: ``aula fit-gate --strict``, for a course that prefers "not
    covered" to a guess. The fallback is not read: a strict gate has none."""
    scored = [(s.answerable, gate.p_covered_of(s.feats)) for s in samples]
    worst = max((p for answerable, p in scored if not answerable), default=0.0)
    gate.min_p = next((t for t in STRICT_STEPS if worst < t), STRICT_STEPS[-1])
    gate.quote_min_covered = gate.min_p
    pairs = [(answerable, p >= gate.min_p) for answerable, p in scored]
    gate.fitted["strict_min_p"] = gate.min_p
    gate.fitted["strict_balanced_accuracy"] = round(_balanced(pairs), 4)
    gate.fitted["strict_answerable_answered"] = sum(p for t, p in pairs if t)


def _logistic(samples: Sequence[GateSample]) -> tuple[Logistic, float, list[dict[str, Any]]]:
    """``eval.fitting.select_logistic`` over the signals every sample has and that vary (older
    sample files lack the newer signals; best_p never varies when measured without the LLM
    check), among the subsets that mix a ``LEXICAL`` signal with another one (when the samples
    have both kinds)."""
    names = [k for k in FEATURES if all(k in s.feats for s in samples)
             and len({s.feats[k] for s in samples}) > 1]
    mixed = any(k in LEXICAL for k in names) and any(k not in LEXICAL for k in names)
    return select_logistic([s.feats for s in samples], [s.answerable for s in samples], names,
                           lambda cols: not mixed or {c in LEXICAL for c in cols} == {True, False})


def _model(weights: Mapping[str, float], bias: float) -> Logistic:
    return Logistic(tuple(weights.values()), bias, tuple(weights))


# --- the labelled question set (bench/data/answers_3b1b.jsonl) ------------------------------


@dataclass(frozen=True)
class GateQuestion:
    """A question of a gate/answer bench: answerable or not, with its gold span when it is."""

    qid: str
    question: str
    answerable: bool
    split: str = "fit"
    lang: str = "pt"
    gold_lecture: str | None = None
    gold_start: float | None = None
    gold_end: float | None = None
    kind: str = ""
    """What sort of question it is (``gate_3b1b``: answerable, neighbouring subject, course
    logistics), for the figures by kind."""

    def overlaps(self, lecture_id: str, start: float, end: float) -> bool:
        return (self.gold_lecture == lecture_id and self.gold_start is not None
                and self.gold_end is not None and start < self.gold_end and end > self.gold_start)


def read_questions(path: Path, split: str | None = None) -> list[GateQuestion]:
    """JSON Lines of ``{id, question, answerable, split, lang, gold_lecture, gold_start,
    gold_end}`` (``answerable`` may be left out of a row with a ``gold_lecture``: a retrieval
    bench's questions); a bad line raises one ValueError naming the file and line."""
    out: list[GateQuestion] = []
    for n, raw in read_objects(path):
        try:
            q = GateQuestion(
                qid=str(raw["id"]), question=str(raw["question"]),
                # a retrieval bench's row (a gold span, no ``answerable``) is answerable
                answerable=bool(raw["answerable"] if "answerable" in raw or
                                not raw.get("gold_lecture") else True),
                split=str(raw.get("split", "fit")),
                lang=str(raw.get("lang", "pt")), gold_lecture=raw.get("gold_lecture"),
                gold_start=None if raw.get("gold_start") is None else float(raw["gold_start"]),
                gold_end=None if raw.get("gold_end") is None else float(raw["gold_end"]),
                kind=str(raw.get("kind", "")),
            )
        except KeyError as exc:
            raise InputError(f"{path}: line {n}: missing field {exc.args[0]!r}") from exc
        except (TypeError, ValueError) as exc:
            raise InputError(f"{path}: line {n}: {exc}") from exc
        if q.answerable and not q.gold_lecture:
            raise InputError(f"{path}: line {n}: an answerable question needs gold_lecture")
        if split is None or q.split == split:
            out.append(q)
    return out


def sample_for(q: GateQuestion, passages: Sequence[Passage], probs: Sequence[float | None],
               hits: Sequence[Any], feats: Mapping[str, float]) -> GateSample:
    """The gate's signals for ``q`` (``feats``: ``Pipeline.features`` of what was searched,
    as ``/ask`` searches). Which passages overlap the gold span is known only for an
    answerable question with a gold span."""
    gold = ([q.overlaps(p.hit.lecture_id, p.start, p.end) for p in passages]
            if q.answerable and q.gold_start is not None else None)
    return GateSample(q.answerable, list(probs), [float(h.score) for h in hits], gold,
                      dict(feats), q.qid)
