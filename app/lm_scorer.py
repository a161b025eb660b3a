"""The language model run in this process to read log-probabilities of a given text: the
judge's likelihood gain (``AULA_JUDGE_LIKELIHOOD``, eval/likelihood.py) and the retriever's
query-likelihood rerank (``AULA_RERANK=likelihood``, corpus/rerank.py).

Each is a ``TransformersScorer`` over the embedded LLM's GGUF, a local Hugging Face folder or a
``.gguf`` file; one per process for each (model, dtype), loaded on first use.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from corpus.errors import InputError
from eval.likelihood import TransformersScorer


class EmbeddedScorer(TransformersScorer):
    """The embedded LLM's GGUF as a scorer, put together from its parts on first use (a service
    that never needs it never loads it)."""

    def __init__(self, cache_dir: Path, **kw: Any) -> None:
        from app.embedded_llm import GGUF_NAME

        super().__init__(cache_dir / "models", gguf_file=GGUF_NAME, **kw)
        self.cache_dir = cache_dir

    def _load(self) -> Any:
        if self._loaded is None:
            from app.embedded_llm import assemble_gguf

            gguf = assemble_gguf(self.cache_dir)
            self.path, self.gguf_file = gguf.parent, gguf.name
        return super()._load()


@functools.lru_cache(maxsize=4)
def scorer_for(choice: str, cache_dir: Path, *, dtype: str = "float32",
               setting: str = "AULA_JUDGE_LIKELIHOOD") -> TransformersScorer | None:
    """The scorer ``choice`` names: "embedded", "off" (None), a model folder or a ``.gguf``
    file; a bad value is one error naming ``setting``."""
    choice = choice.strip()
    if choice in ("", "off"):
        return None
    if choice == "embedded":
        return EmbeddedScorer(cache_dir, dtype=dtype, setting=setting)
    path = Path(choice).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return TransformersScorer(path.parent, gguf_file=path.name, dtype=dtype, setting=setting)
    if path.is_dir():
        return TransformersScorer(path, dtype=dtype, setting=setting)
    raise InputError(f"{setting}: {choice!r} is not 'embedded', 'off', a model folder or a "
                     ".gguf file")
