"""Hard negatives mined from the index and the E5 bi-encoder fine-tuned on the generated
questions (sentence-transformers' trainer, multiple-negatives ranking loss: each question
against its passage, its mined negatives and the other questions' passages of the batch).

Negatives for a question, by the base model's similarity: the best windows of the *same
lecture* that do not hold its passage ("another two minutes of the right lecture") and the best
windows of *other lectures* ("another lecture on the same subject"): the two failures seen on
the answer bench. Each text is what the reranker reads at search time (``rerank_text``: 900
characters from the window's best unit for the question).

A tenth of the questions (by passage key) is held out: before and after figures on them go to
``adapted.json``. The model is written to a temporary folder and moved into place whole, so an
interrupted run leaves the previous model (or none), never half of one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from corpus.adapt.cloze import taken_out
from corpus.adapt.questions import GeneratedQuestion, grounded
from corpus.adapt.store import MANIFEST, MODEL, adapted_dir
from corpus.errors import InputError
from corpus.models import Hit
from corpus.rerank import rerank_text

log = logging.getLogger(__name__)

POOL = 30
"""Windows of the base model's ranking negatives are mined from."""
SAME_LECTURE = 2
OTHER_LECTURES = 2
GAP = 90.0
"""Seconds kept between a same-lecture negative and the question's passage: a window right
beside the passage often goes on with the same explanation, and training against it teaches
against a right answer (on 3b1b-pt, 349 generated questions: without a gap the model found its
held-out questions' passages less often than the base model, 0.564 -> 0.487; with 90 s, more
often, 0.590 -> 0.615)."""
MAX_SEQ_LENGTH = 256
"""Tokens of a passage the adapted model reads once trained (``rerank_text``'s 900 characters
are about 250)."""
TRAIN_SEQ_LENGTH = 128
"""Tokens of a text read in training: the first half of a passage, about a 30 s unit, what the
adapted gate compares a question with. Against 256, the same gate decisions on every fitting
question of both courses in 40% of the time and 60% of the memory (docs/search.md)."""
MIN_QUESTIONS = 10


class AdaptError(InputError):
    """Too few questions to adapt on, or a base model that cannot be fine-tuned."""


@dataclass(frozen=True)
class Example:
    question: str
    positive: str
    negatives: tuple[str, ...]
    lecture_id: str
    key: str


def held_out(key: str) -> bool:
    """A tenth of the passages, by key: their questions measure the model, never train it."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 10 == 0


def _window_hit(row: Any, lectures: dict[str, tuple[str, str]], answer_start: float) -> Hit:
    title, url = lectures.get(str(row.lecture_id), ("", ""))
    return Hit(corpus_id=int(row.corpus_id), score=0.0, lecture_id=str(row.lecture_id),
               title=title, url=url, start=float(row.start), end=float(row.end),
               text=str(row.text), answer_start=answer_start)


class Miner:
    """The base model's view of the index: windows, units and their vectors."""

    def __init__(self, data: Any, embed_queries: Any) -> None:
        self.segments = data.segments.reset_index(drop=True)
        self.vectors = np.asarray(data.vectors, dtype=np.float32)
        self.units = data.units
        self.unit_vectors = (np.asarray(data.unit_vectors, dtype=np.float32)
                             if data.unit_vectors is not None else None)
        self.embed_queries = embed_queries
        self.lectures = {str(r.lecture_id): (str(r.title), str(r.url))
                         for r in data.lectures.itertuples(index=False)}
        self._units_of: dict[str, np.ndarray] = {}
        self._unit_start = np.zeros(0)
        self._unit_end = np.zeros(0)
        if self.units is not None:
            self._unit_start = self.units["start"].to_numpy(dtype=float)
            self._unit_end = self.units["end"].to_numpy(dtype=float)
            for lec, idx in self.units.groupby("lecture_id").indices.items():
                self._units_of[str(lec)] = np.asarray(idx)

    def best_unit_start(self, qvec: np.ndarray, row: Any) -> float:
        """Where the window's unit most like the question starts (the window's start without
        units), as search sets ``answer_start``."""
        idx = self._units_of.get(str(row.lecture_id))
        if idx is None or self.unit_vectors is None or self.units is None:
            return float(row.start)
        inside = idx[(self._unit_start[idx] >= row.start - 1e-6)
                     & (self._unit_end[idx] <= row.end + 1e-6)]
        if not len(inside):
            return float(row.start)
        best = inside[int(np.argmax(self.unit_vectors[inside] @ qvec))]
        return float(self._unit_start[best])

    def examples(self, questions: Sequence[GeneratedQuestion], *,
                 same_lecture: int = SAME_LECTURE, other_lectures: int = OTHER_LECTURES,
                 gap: float = GAP, progress: bool = False) -> list[Example]:
        from tqdm import tqdm

        texts = ({} if self.units is None else
                 dict(zip(self.units["text_hash"].astype(str), self.units["text"].astype(str),
                          strict=True)))
        qs = [q for q in questions if q.question and (
            q.key not in texts or grounded(q.question, texts[q.key]))]
        if not qs:
            return []
        qvecs = self.embed_queries([str(q.question) for q in qs])
        out: list[Example] = []
        lec_col = self.segments["lecture_id"].astype(str).to_numpy()
        start_col = self.segments["start"].to_numpy()
        end_col = self.segments["end"].to_numpy()
        for q, qvec in tqdm(list(zip(qs, qvecs, strict=True)), desc="negatives",
                            unit="question", disable=not progress):
            same = lec_col == q.lecture_id
            holds = same & (start_col <= q.start + 1e-6) & (end_col >= q.end - 1e-6)
            if not holds.any():  # a passage that crosses windows: the one overlapping most
                overlap = np.minimum(end_col, q.end) - np.maximum(start_col, q.start)
                holds = same & (overlap == overlap[same].max()) if same.any() else holds
            if not holds.any():
                continue
            scores = self.vectors @ qvec
            pool = np.argsort(-scores)[:POOL]
            pos_row = self.segments.iloc[int(np.flatnonzero(holds)[0])]
            positive = taken_out(q, rerank_text(_window_hit(pos_row, self.lectures, q.start)))
            apart = same & ((end_col <= q.start - gap) | (start_col >= q.end + gap))
            negatives: list[str] = []
            for mask, count in ((apart, same_lecture), (~same, other_lectures)):
                if count <= 0:
                    continue
                ranked = [i for i in pool if mask[i]][:count]
                if len(ranked) < count:  # fewer in the pool: the best of the rest
                    rest = np.flatnonzero(mask)
                    ranked += [int(i) for i in rest[np.argsort(-scores[rest])]
                               if i not in ranked][: count - len(ranked)]
                for i in ranked:
                    row = self.segments.iloc[int(i)]
                    negatives.append(rerank_text(
                        _window_hit(row, self.lectures, self.best_unit_start(qvec, row))))
            out.append(Example(str(q.question), positive, tuple(negatives), q.lecture_id,
                               q.key))
        return out


def rank_of_positive(embed: Any, examples: Sequence[Example]) -> list[int]:
    """For each example, the rank (0 = first) of its passage among it and its negatives by the
    model ``embed`` (``texts, kind -> rows``)."""
    ranks: list[int] = []
    for ex in examples:
        q = embed([ex.question], "query")[0]
        p = embed([ex.positive, *ex.negatives], "passage")
        s = p @ q
        ranks.append(int((s[1:] > s[0]).sum()))
    return ranks


def fine_tune(base_folder: str, examples: Sequence[Example], out: Path, *, epochs: int = 1,
              seed: int = 0, batch_size: int = 16, progress: bool = False) -> None:
    """Fine-tune the sentence-transformers model at ``base_folder`` on ``examples`` and save
    it to ``out``."""
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = SentenceTransformer(base_folder, local_files_only=True)
    model.max_seq_length = TRAIN_SEQ_LENGTH
    for name, param in model.named_parameters():  # the vocabulary's rows stay as they are
        if "word_embeddings" in name:
            param.requires_grad = False
    width = min(len(ex.negatives) for ex in examples)
    columns: dict[str, list[str]] = {
        "anchor": ["query: " + ex.question for ex in examples],
        "positive": ["passage: " + ex.positive for ex in examples],
    }
    for j in range(width):
        columns[f"negative_{j + 1}"] = ["passage: " + ex.negatives[j] for ex in examples]
    steps = epochs * -(-len(examples) // batch_size)
    # the trainer prints its loss lines on stdout: they go to stderr (stdout may be --json)
    with (tempfile.TemporaryDirectory() as work, contextlib.redirect_stdout(sys.stderr),
          warnings.catch_warnings()):
        # transformers renames gradient checkpointing, which sentence-transformers' model
        # still implements under the old name only: its deprecation notes are not the user's
        warnings.filterwarnings("ignore", ".*gradient_checkpointing", FutureWarning)
        args = SentenceTransformerTrainingArguments(
            output_dir=work, num_train_epochs=epochs, per_device_train_batch_size=batch_size,
            learning_rate=2e-5, warmup_steps=max(1, steps // 10), seed=seed, save_strategy="no",
            report_to=[], logging_steps=10, disable_tqdm=not progress,
            dataloader_drop_last=False, dataloader_pin_memory=False,
            # each layer's activations recomputed in the backward pass instead of kept: the
            # same gradients in a fraction of the memory (non-reentrant: the frozen
            # vocabulary's rows leave the layers' inputs without gradients of their own)
            gradient_checkpointing=True,
            gradient_checkpointing_kwargs={"use_reentrant": False},
        )
        trainer = SentenceTransformerTrainer(
            model=model, args=args, train_dataset=Dataset.from_dict(columns),
            loss=MultipleNegativesRankingLoss(model),
        )
        trainer.train()
    model.max_seq_length = MAX_SEQ_LENGTH
    model.save(str(out))


def _embed_with(model_folder: str, device: str | None = None) -> Any:
    from corpus.embed import E5Embedder

    emb = E5Embedder(model_folder, "adapted", device=device)
    return lambda texts, kind: emb.embed(texts, kind)


def train_model(base: Any, data: Any, questions: Sequence[GeneratedQuestion], out: Path, *,
                epochs: int = 1, seed: int = 0, same_lecture: int = SAME_LECTURE,
                other_lectures: int = OTHER_LECTURES, gap: float = GAP,
                progress: bool = False) -> dict[str, Any]:
    """Mine negatives with the ``base`` embedder, fine-tune it on the questions not held out
    into the folder ``out`` (with ``adapted.json``); the manifest."""
    qs = [q for q in questions if q.question]
    if len(qs) < MIN_QUESTIONS:
        raise AdaptError(f"{len(qs)} generated questions: at least {MIN_QUESTIONS} are needed "
                         "to adapt (raise --questions)")
    miner = Miner(data, lambda texts: base.embed(texts, "query"))
    t0 = time.perf_counter()
    examples = miner.examples(qs, same_lecture=same_lecture, other_lectures=other_lectures,
                              gap=gap, progress=progress)
    if len(examples) < MIN_QUESTIONS:
        raise AdaptError(f"{len(examples)} of {len(qs)} generated questions name what their "
                         f"passage says: at least {MIN_QUESTIONS} are needed to adapt (raise "
                         "--questions)")
    train = [ex for ex in examples if not held_out(ex.key)]
    test = [ex for ex in examples if held_out(ex.key)]
    mined_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    fine_tune(_model_folder(base), train, out, epochs=epochs, seed=seed, progress=progress)
    trained_s = time.perf_counter() - t0
    before = rank_of_positive(lambda t, k: base.embed(t, k), test)
    after = rank_of_positive(_embed_with(str(out)), test)
    manifest = {
        "base_model": base.model_id,
        "questions": len(qs),
        "questions_from": sorted({q.model for q in qs}),
        "kept": len(examples),
        "trained_on": len(train),
        "held_out": len(test),
        "epochs": epochs,
        "train_tokens": TRAIN_SEQ_LENGTH,
        "negatives": {"same_lecture": same_lecture, "other_lectures": other_lectures,
                      "gap_s": gap},
        "before_hit@1": _hit1(before),
        "after_hit@1": _hit1(after),
        "mined_s": round(mined_s, 1),
        "trained_s": round(trained_s, 1),
        "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return manifest


def train_adapted(index_root: Path, base: Any, data: Any,
                  questions: Sequence[GeneratedQuestion], *, epochs: int = 1, seed: int = 0,
                  gap: float = GAP, progress: bool = False) -> dict[str, Any]:
    """``train_model`` from the ``base`` embedder into ``INDEX/adapted/model``, moved into
    place whole; the figures."""
    folder = adapted_dir(index_root)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".model-", dir=folder))
    target = folder / MODEL
    try:
        manifest = train_model(base, data, questions, tmp, epochs=epochs, seed=seed, gap=gap,
                               progress=progress)
        old = folder / ".model-old"
        if old.exists():
            shutil.rmtree(old)
        if target.exists():
            os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return {"model_dir": str(target), **manifest}


def _hit1(ranks: Sequence[int]) -> float:
    return float(np.mean([r == 0 for r in ranks])) if ranks else float("nan")


def _model_folder(embedder: Any) -> str:
    """Where the base embedder was loaded from (a local folder or a cached id)."""
    path = getattr(embedder, "path", None)
    if not path:
        raise AdaptError(f"embedding model {embedder.model_id!r} cannot be fine-tuned here")
    return str(path)
