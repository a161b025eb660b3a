"""The adapted model's reading of a question against the whole course: how close the course's
best 30 s unit comes (``adapted_top``) and how far it stands out from the course's other units
(``adapted_z``, in standard deviations). Signals of the evidence gate that reads them
(``AULA_GATE_FILE=adapted``).

On recorded live classes the base E5's best unit sits near 0.90 for every question, covered or
not; the model fine-tuned on the course's own passages spreads them apart (fitting questions,
covered against uncovered, AUC 0.76 → 0.87 for the best unit on the live classes, 0.95 → 1.00
on 3b1b-pt; docs/answers.md).

The units' vectors by the adapted model are computed once and kept in
``INDEX/adapted/unit_vectors.npz`` with the text hash of each unit and the model they were
computed with: a new index version reads only its new or changed units, a new model all.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from corpus.adapt.store import adapted_dir

log = logging.getLogger(__name__)

VECTORS = "unit_vectors.npz"


class AdaptedSignals:
    """The adapted model's best unit cosine over the whole index and its z-score."""

    def __init__(self, embedder: Any, unit_vectors: np.ndarray) -> None:
        self.embedder = embedder
        self.units = np.asarray(unit_vectors, dtype=np.float32)

    def __call__(self, question: str) -> dict[str, float]:
        q = np.asarray(self.embedder.embed([question], "query"), dtype=np.float32)[0]
        scores = self.units @ q
        top = float(scores.max())
        spread = float(scores.std()) or 1.0
        return {"adapted_top": top, "adapted_z": (top - float(scores.mean())) / spread}


def _model_key(manifest: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()


def _stored(folder: Path, model: str) -> dict[str, np.ndarray]:
    """The vectors kept in ``folder`` by their unit's text hash, when the same model wrote
    them (else none)."""
    try:
        with np.load(folder / VECTORS) as kept:
            if str(kept["model_sha256"]) != model:
                return {}
            return dict(zip(kept["text_hash"].tolist(), kept["vectors"], strict=True))
    except (OSError, ValueError, KeyError):
        return {}


def unit_vectors(index_root: Path | str, units: Any, embedder: Any,
                 manifest: dict[str, Any], *, progress: bool = False) -> np.ndarray:
    """The units' vectors by the adapted model: those kept in ``adapted/`` reused by the
    unit's text (a new index version reads only its new or changed units), the others
    computed, and the whole stored again in one file, replaced atomically."""
    folder = adapted_dir(index_root)
    model = _model_key(manifest)
    kept = _stored(folder, model)
    hashes = units["text_hash"].astype(str).tolist()
    missing = [i for i, h in enumerate(hashes) if h not in kept]
    if not missing:
        return np.stack([kept[h] for h in hashes]).astype(np.float32)
    log.info("the adapted model reads %d of the index's %d units (kept in %s)", len(missing),
             len(hashes), folder)
    texts = units["text"].astype(str).tolist()
    new = np.asarray(embedder.embed([texts[i] for i in missing], "passage",
                                    progress=progress), dtype=np.float32)
    kept.update(zip((hashes[i] for i in missing), new, strict=True))
    vectors = np.stack([kept[h] for h in hashes]).astype(np.float32)
    tmp = folder / (VECTORS + ".tmp")
    with tmp.open("wb") as f:
        np.savez(f, vectors=vectors, text_hash=np.array(hashes), model_sha256=np.array(model))
    os.replace(tmp, folder / VECTORS)
    return vectors


def load_signals(index_root: Path | str, data: Any, *, device: str | None = None,
                 model: Any = None, progress: bool = False) -> AdaptedSignals | None:
    """The adapted signals over ``data``'s units (``model``: the index's adapted model already
    loaded, an ``AdaptedReranker``), or None with one warning when the index has no adapted
    model, no units, or a folder that cannot be read."""
    from corpus.adapt.rerank import load_adapted

    if data.units is None or len(data.units) == 0:
        log.warning("the index has no 30 s units: the adapted gate cannot read it")
        return None
    if model is None:
        model = load_adapted(index_root, device=device, purpose="the adapted gate")
        if model is None:
            return None
    embedder = model.embedder
    try:
        vectors = unit_vectors(index_root, data.units, embedder, model.manifest,
                               progress=progress)
    except Exception as exc:  # an unwritable folder or a failing model: decide without it
        log.warning("the adapted model cannot read the index's units (%s): the default gate "
                    "decides", str(exc).splitlines()[0][:300])
        return None
    return AdaptedSignals(embedder, vectors)
