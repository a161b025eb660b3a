"""The adapted model as search's reranker: the first fused hits reordered by the fine-tuned
E5's cosine between the question and what each hit says from its best unit on
(``rerank_text``), with a little of the fused order kept (``prior``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from corpus.adapt.store import MANIFEST, MODEL, adapted_dir
from corpus.models import Hit
from corpus.rerank import reorder, rerank_text, with_prior

log = logging.getLogger(__name__)

ADAPTED_PRIOR = 0.08
"""Weight of minus the log of the fused rank beside the adapted cosine, chosen among 0-0.12 on
the 74 fitting questions of 3b1b-pt (``bench/adapt_gain.py``)."""


class AdaptedReranker:
    """Reorders hits by the adapted model's cosine to the question."""

    def __init__(self, embedder: Any, manifest: dict[str, Any], *,
                 prior: float = ADAPTED_PRIOR) -> None:
        self.embedder = embedder
        self.manifest = manifest
        self.prior = prior
        self.name = f"adapted:{manifest.get('base_model', '?')}"

    def scores(self, question: str, hits: Sequence[Hit]) -> list[float]:
        if not hits:
            return []
        q = self.embedder.embed([question], "query")[0]
        p = self.embedder.embed([rerank_text(h) for h in hits], "passage")
        return [float(x) for x in p @ q]

    def rerank(self, question: str, hits: list[Hit]) -> list[Hit]:
        scored: list[float | None] = list(self.scores(question, hits))
        return reorder(hits, with_prior(scored, self.prior))


def load_adapted(index_root: Path | str, *, device: str | None = None,
                 prior: float = ADAPTED_PRIOR, purpose: str = "AULA_RERANK=adapted"
                 ) -> AdaptedReranker | None:
    """The index's adapted model, or None, with one warning, when there is none or its folder
    cannot be read (corrupt, half copied, another format): search goes on with its own
    ranking."""
    folder = adapted_dir(index_root) / MODEL
    if not folder.exists():
        log.warning("%s, but %s holds no adapted model: run `aula adapt`", purpose,
                    index_root)
        return None
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        if not isinstance(manifest, dict):
            raise ValueError(f"{MANIFEST} is not an object")
        from corpus.embed import E5Embedder

        embedder = E5Embedder(str(folder), f"adapted:{manifest.get('base_model', '?')}",
                              device=device)
        probe = embedder.embed(["teste"], "query")
        if not np.isfinite(probe).all():
            raise ValueError("the model gives non-finite vectors")
    except Exception as exc:  # any fault of the folder: search must go on without it
        log.warning("adapted model in %s cannot be loaded (%s): going on without it (%s); "
                    "run `aula adapt` again", folder, str(exc).splitlines()[0][:300], purpose)
        return None
    return AdaptedReranker(embedder, manifest, prior=prior)
