"""How much more likely the instructor's reference answer makes the judged answer (issue 11).

A language model reads the student's question and then the judged answer as its own reply,
twice: once after reading the reference answer ("the right answer, as the lecture gives it"),
once without it. For each token of the answer, the log-probability it gains from the reference
is its pointwise mutual information with it. An answer that says what the reference says
(in other words too) is made more likely by it; a wrong detail, a swapped cause or a claim the
reference never makes is not, and a vague answer gains little because it says little of it.
This is likelihood scoring in the manner of GPTScore / BARTScore, read as a difference so that
fluency and length (what the model would write anyway) cancel out.

The signal is the mean gain per answer token, in nats (its sum, worst sentence or low
percentile told the labels apart less well on the judge bench's fitting part; README).

It needs the log-probabilities of a given text, which an OpenAI-compatible chat endpoint does
not return (llama.cpp's server has no prompt log-probabilities), so the scorer is a model run in
this process: ``TransformersScorer`` reads a local Hugging Face folder or a GGUF file (by
default the embedded judge's own GGUF, through transformers). The signal is optional: without
a scorer (``AULA_JUDGE_LIKELIHOOD=off``) an item simply lacks it and the label model's
submodel without it labels the item.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from corpus.errors import InputError

SYSTEM = "Você é um professor que responde dúvidas de alunos sobre a aula."
WITH_REFERENCE = (
    "Pergunta do aluno: {question}\n\n"
    "Resposta correta, segundo a aula: {reference}\n\n"
    "Reescreva com suas palavras uma resposta a essa pergunta."
)
WITHOUT_REFERENCE = "Pergunta do aluno: {question}\n\nResponda à pergunta."
MAX_CHARS = 1500
"""Question, reference and answer are each cut to this many characters (a long answer's first
part says whether it follows the reference; the cost grows with the length)."""


class ContinuationScorer(Protocol):
    """Log-probabilities of ``reply``'s tokens as the assistant's answer to ``messages``."""

    def logprobs(self, messages: list[dict[str, str]], reply: str) -> list[float]: ...


def messages(question: str, reference: str | None) -> list[dict[str, str]]:
    """The conversation the answer is scored as the reply to, with or without the reference."""
    user = (WITHOUT_REFERENCE.format(question=question[:MAX_CHARS]) if reference is None else
            WITH_REFERENCE.format(question=question[:MAX_CHARS],
                                  reference=reference[:MAX_CHARS]))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def mean_gain(with_reference: Sequence[float], without: Sequence[float]) -> float | None:
    """Mean per-token gain from the answer tokens' log-probabilities read with and without the
    reference (the same tokens, in order); None for an empty answer."""
    if not with_reference or len(with_reference) != len(without):
        return None
    return statistics.fmean(a - b for a, b in zip(with_reference, without, strict=True))


def reference_gain(scorer: ContinuationScorer, question: str, answer: str, reference: str
                   ) -> float | None:
    """How much the reference answer raises the answer's likelihood (``mean_gain``); None
    without an answer or a reference."""
    answer = answer.strip()[:MAX_CHARS]
    if not answer or not reference or not reference.strip():
        return None
    return mean_gain(scorer.logprobs(messages(question, reference), answer),
                     scorer.logprobs(messages(question, None), answer))


class TransformersScorer:
    """A causal language model run in this process with transformers: a local Hugging Face
    folder (``path``), or a GGUF file (``path`` its folder, ``gguf_file`` its name; transformers
    reads it into float32, about 6 GB for the embedded 1.5B model). Loaded on first use (about
    a minute on 2 cores), then about 2 s an answer there; one forward pass at a time."""

    def __init__(self, path: Path | str, *, gguf_file: str | None = None) -> None:
        self.path = Path(path)
        self.gguf_file = gguf_file
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            kw: dict[str, Any] = {"gguf_file": self.gguf_file} if self.gguf_file else {}
            try:
                tokenizer = AutoTokenizer.from_pretrained(self.path, **kw)
                # float32: the figures the shipped label model was fitted on were read so
                model = AutoModelForCausalLM.from_pretrained(self.path, dtype=torch.float32,
                                                             **kw)
            except (OSError, ValueError) as exc:
                where = self.path / self.gguf_file if self.gguf_file else self.path
                raise InputError(f"AULA_JUDGE_LIKELIHOOD: the model at {where} cannot be "
                                 f"loaded: {str(exc).splitlines()[0]}") from None
            model.eval()
            self._loaded = (tokenizer, model)
        return self._loaded

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
                logits = model(torch.tensor([head + tail])).logits[0, len(head) - 1:-1]
            logp = torch.log_softmax(logits.float(), dim=-1)
            return logp.gather(1, torch.tensor(tail)[:, None])[:, 0].tolist()
