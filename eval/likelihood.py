"""How much more likely the instructor's reference answer makes the judged answer.

A language model reads the student's question and then the judged answer as its own reply,
twice: once after reading the reference answer ("the right answer, as the lecture gives it"),
once without it. For each token of the answer, the log-probability it gains from the reference
is its pointwise mutual information with it. An answer that says what the reference says
(in other words too) is made more likely by it; a wrong detail, a swapped cause or a claim the
reference never makes is not, and a vague answer gains little because it says little of it.
This is likelihood scoring in the manner of GPTScore / BARTScore, read as a difference so that
fluency and length (what the model would write anyway) cancel out.

The signal is the mean gain per answer token, in nats (its sum, worst sentence or low
percentile told the labels apart less well on the judge bench's fitting part;
docs/judges.md). Beside it, read from the same two passes at no extra cost,
``reference_gain_low``: the mean gain of the answer's worst stretch of ``WINDOW`` tokens, meant
for the answer right but for one part. Offered to the label model beside the mean, forward
selection kept it on the fitting part and it helped the test part a little too
(docs/judges.md); on a single answer it need not fall on the slip (a loosely worded clause
can be the worst stretch), so it is read only through the fitted model.

It needs the log-probabilities of a given text, which an OpenAI-compatible chat endpoint does
not return (llama.cpp's server has no prompt log-probabilities), so the scorer is a model run in
this process: a GGUF file (by default the embedded judge's own) read in its quantised form by
llama.cpp (``eval.llama_scorer.LlamaCppScorer``), or a local Hugging Face folder read by
transformers (``TransformersScorer``). The signal is optional: without
a scorer (``AULA_JUDGE_LIKELIHOOD=off``) an item simply lacks it and the label model's
submodel without it labels the item.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from corpus.embed import bf16_native
from corpus.errors import InputError

SYSTEM = "Você é um professor que responde dúvidas de alunos sobre a aula."
WITH_REFERENCE = (
    "Pergunta do aluno: {question}\n\n"
    "Resposta correta, segundo a aula: {reference}\n\n"
    "Reescreva com suas palavras uma resposta a essa pergunta."
)
WITHOUT_REFERENCE = "Pergunta do aluno: {question}\n\nResponda à pergunta."
WITH_EVIDENCE = (
    "Pergunta do aluno: {question}\n\n"
    "Trecho da aula: {evidence}\n\n"
    "Responda à pergunta com base no trecho da aula."
)
EVIDENCE_CHARS = 2500
"""The lecture text read for ``evidence_gain`` is cut to this many characters (about one
two-minute window; its cost on 2 cores is about 8 s an answer)."""
MAX_CHARS = 1500
"""Question, reference and answer are each cut to this many characters (a long answer's first
part says whether it follows the reference; the cost grows with the length)."""
WINDOW = 40
"""Tokens in the stretch ``reference_gain_low`` reads (a sentence or two; chosen on the judge
bench's fitting part among 6 to 64, docs/judges.md)."""


class ContinuationScorer(Protocol):
    """Log-probabilities of ``reply``'s tokens as the assistant's answer to ``messages``."""

    def logprobs(self, messages: list[dict[str, str]], reply: str) -> list[float]: ...


def messages(question: str, reference: str | None, evidence: str | None = None
             ) -> list[dict[str, str]]:
    """The conversation the answer is scored as the reply to: after the reference answer,
    after the lecture's text (``evidence``), or after the question alone."""
    q = question[:MAX_CHARS]
    if reference is not None:
        user = WITH_REFERENCE.format(question=q, reference=reference[:MAX_CHARS])
    elif evidence is not None:
        user = WITH_EVIDENCE.format(question=q, evidence=evidence[:EVIDENCE_CHARS])
    else:
        user = WITHOUT_REFERENCE.format(question=q)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def mean_gain(with_reference: Sequence[float], without: Sequence[float]) -> float | None:
    """Mean per-token gain from the answer tokens' log-probabilities read with and without the
    reference (the same tokens, in order); None for an empty answer."""
    if not with_reference or len(with_reference) != len(without):
        return None
    return statistics.fmean(a - b for a, b in zip(with_reference, without, strict=True))


def lowest_window_gain(with_reference: Sequence[float], without: Sequence[float],
                       window: int = WINDOW) -> float | None:
    """The mean per-token gain of the answer's worst stretch of ``window`` tokens (the whole
    answer when it is shorter); None for an empty answer."""
    if not with_reference or len(with_reference) != len(without):
        return None
    gains = [a - b for a, b in zip(with_reference, without, strict=True)]
    width = min(window, len(gains))
    return min(statistics.fmean(gains[i:i + width]) for i in range(len(gains) - width + 1))


def reference_gains(scorer: ContinuationScorer, question: str, answer: str, reference: str
                    ) -> dict[str, float | None] | None:
    """``reference_gain`` (the mean gain, ``mean_gain``) and ``reference_gain_low`` (its worst
    stretch, ``lowest_window_gain``) from one pair of passes; None without an answer or a
    reference (``answer_gains`` with no lecture text)."""
    if not answer.strip() or not reference or not reference.strip():
        return None
    gains = answer_gains(scorer, question, answer, reference, None)
    return {"reference_gain": gains["reference_gain"],
            "reference_gain_low": gains["reference_gain_low"]}


def answer_gains(scorer: ContinuationScorer, question: str, answer: str,
                 reference: str | None, evidence: str | None) -> dict[str, float | None]:
    """The gains of the answer from the reference answer (``reference_gain``,
    ``reference_gain_low``) and from the lecture's text it is judged on (``evidence_gain``,
    ``evidence_gain_low``: what the lecture says there makes a right answer more likely, a
    wrong detail or a vague answer less), each where it is given; the pass without either is
    read once for both. Missing ones are None."""
    out: dict[str, float | None] = dict.fromkeys(GAIN_FEATURES)
    answer = answer.strip()[:MAX_CHARS]
    after: dict[str, list[dict[str, str]]] = {}
    if reference is not None and reference.strip():
        after["reference"] = messages(question, reference)
    if evidence is not None and evidence.strip():
        after["evidence"] = messages(question, None, evidence)
    if not answer or not after:
        return out
    without = scorer.logprobs(messages(question, None), answer)
    for name, conversation in after.items():
        with_text = scorer.logprobs(conversation, answer)
        out[f"{name}_gain"] = mean_gain(with_text, without)
        out[f"{name}_gain_low"] = lowest_window_gain(with_text, without)
    return out


GAIN_FEATURES = ("reference_gain", "reference_gain_low", "evidence_gain", "evidence_gain_low")
"""What ``answer_gains`` reads, in this order."""


def reference_gain(scorer: ContinuationScorer, question: str, answer: str, reference: str
                   ) -> float | None:
    """How much the reference answer raises the answer's likelihood (``mean_gain``); None
    without an answer or a reference."""
    gains = reference_gains(scorer, question, answer, reference)
    return None if gains is None else gains["reference_gain"]


def likelihood_scale(model_id: str) -> str:
    """The scale a scorer's gains are on: its model id, with a GGUF read quantised by llama.cpp
    ("NAME@llama.cpp") on the same scale as that GGUF de-quantised into float32
    ("NAME@float32"): on 16 answers of the judge set the two read gains correlated at 0.999,
    0.001 nats apart on average (docs/judges.md), so a label model fitted on either reads
    both."""
    name, _, how = model_id.rpartition("@")
    return f"{name}@float32" if name and how == "llama.cpp" else model_id


def resolve_dtype(dtype: str, device: str) -> str:
    """``dtype`` with "auto" decided for ``device`` (see ``TransformersScorer``)."""
    if dtype != "auto":
        return dtype
    return "bfloat16" if device != "cpu" or bf16_native() else "float32"


class TransformersScorer:
    """A causal language model run in this process with transformers: a local Hugging Face
    folder (``path``), or a GGUF file (``path`` its folder, ``gguf_file`` its name; transformers
    reads it into float32, about 6 GB for the embedded 1.5B model). Loaded on first use (about
    a minute on 2 cores), then about 2 s an answer there; one forward pass at a time.

    On a GPU when one is present. ``dtype``: "float32" (the judge's: the shipped label model
    was fitted on float32 figures), "bfloat16", or "auto": bfloat16 on a GPU or a CPU with
    bfloat16 instructions (about 4x faster than float32 on this project's 2-core AMD EPYC,
    half the memory), float32 otherwise. ``setting`` is the setting named in load errors."""

    def __init__(self, path: Path | str, *, gguf_file: str | None = None,
                 dtype: str = "float32", setting: str = "AULA_JUDGE_LIKELIHOOD") -> None:
        self.path = Path(path)
        self.gguf_file = gguf_file
        self.dtype = dtype
        self.setting = setting
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None
        self._device = "cpu"

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            kw: dict[str, Any] = {"gguf_file": self.gguf_file} if self.gguf_file else {}
            try:
                tokenizer = AutoTokenizer.from_pretrained(self.path, **kw)
                model = AutoModelForCausalLM.from_pretrained(self.path, dtype=torch.float32,
                                                             **kw)
            except (OSError, ValueError) as exc:
                where = self.path / self.gguf_file if self.gguf_file else self.path
                raise InputError(f"{self.setting}: the model at {where} cannot be "
                                 f"loaded: {str(exc).splitlines()[0]}") from None
            self._device = "cuda" if torch.cuda.is_available() else "cpu"
            dtype = resolve_dtype(self.dtype, self._device)
            model = model.to(getattr(torch, dtype)).to(self._device)
            model.eval()
            self._loaded = (tokenizer, model)
        return self._loaded

    @property
    def model_id(self) -> str:
        """The model and the precision its figures are read in ("NAME@float32"): a label model
        fitted on gains of one scorer does not read another's (``eval.run.labelled``)."""
        name = self.gguf_file or self.path.name
        return f"{Path(name).stem}@{self.dtype}"

    def load(self) -> None:
        """Load the model now instead of on the first text scored."""
        with self._lock:
            self._load()

    def logprobs(self, messages: list[dict[str, str]], reply: str) -> list[float]:
        import torch

        with self._lock:
            tokenizer, model = self._load()
            prompt = tokenizer.apply_chat_template(messages, tokenize=False,
                                                   add_generation_prompt=True)
            head = tokenizer(prompt, add_special_tokens=False).input_ids
            tail = tokenizer(reply, add_special_tokens=False).input_ids
            if not tail:
                return []
            with torch.inference_mode():
                ids = torch.tensor([head + tail], device=self._device)
                logits = model(ids).logits[0, len(head) - 1:-1]
            logp = torch.log_softmax(logits.float(), dim=-1)
            return logp.gather(1, ids[0, len(head):, None])[:, 0].tolist()
