"""A course's adapted model, as ``aula adapt`` trains it and as ``aula ingest`` does on its own
for a course that has none: the E5 model fine-tuned on the course's passages, then the index's
units read by it once (what the adapted evidence gate compares a question with)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from corpus.adapt.train import GAP

if TYPE_CHECKING:
    from app.config import Settings

QUESTIONS = 400
"""Passages to have a question for, by default."""


def course_passages(s: Settings, seed: int = 0) -> tuple[Any, list[Any]]:
    """The index's data and the passages to have a question for, in the seeded order that
    covers the lectures in turn (its units; its windows where it has none)."""
    from corpus.adapt.questions import passages
    from corpus.index import IndexStore

    data = IndexStore(s.index.dir).load(with_faiss=False)
    return data, passages(data.units if data.units is not None else data.segments, seed=seed)


def sentence_questions(candidates: list[Any], target: int) -> tuple[dict[str, Any], list[Any]]:
    """The first ``target`` candidates' own sentences as their questions (``--from-sentences``),
    and what was taken."""
    from corpus.adapt.cloze import cloze_questions

    asked = cloze_questions(candidates, target)
    return ({"from_sentences": True, "passages": len(candidates), "questions": len(asked)},
            asked)


MIN_PASSAGES = 100
"""The fewest passages a course needs for ``aula ingest`` to adapt its model on its own (the
adapted gate was fitted with models of 100 to 400 questions)."""


def adapt_after_ingest(s: Settings, *, progress: bool,
                       starting: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """``aula adapt --from-sentences`` with its defaults, for a course whose index has no adapted
    model yet and holds at least ``MIN_PASSAGES`` passages (``starting`` called before the
    minutes of training); what was done, or why not."""
    from corpus.adapt.store import MODEL, adapted_dir

    if (adapted_dir(s.index.dir) / MODEL).exists():
        return {"adapted": False, "why": "the index already has an adapted model"}
    data, candidates = course_passages(s)
    if len(candidates) < MIN_PASSAGES:
        return {"adapted": False, "why": f"{len(candidates)} passages, fewer than "
                f"{MIN_PASSAGES}: the default evidence check decides"}
    starting()
    result, asked = sentence_questions(candidates, QUESTIONS)
    result.update(train_and_read(s, data, asked, epochs=1, seed=0, gap=GAP, progress=progress))
    return {"adapted": True, **result}


def train_and_read(s: Settings, data: Any, questions: list[Any], *, epochs: int, seed: int,
                   gap: float, progress: bool) -> dict[str, Any]:
    """The model fine-tuned into INDEX/adapted/, then the index's units read by it once (what
    the adapted gate compares a question with)."""
    from app.services import embedder_from_settings
    from corpus.adapt.signals import load_signals
    from corpus.adapt.train import train_adapted

    result = train_adapted(s.index.dir, embedder_from_settings(s), data, questions,
                           epochs=epochs, seed=seed, gap=gap, progress=progress)
    load_signals(s.index.dir, data, device=s.embedding.device, progress=progress)
    return result
