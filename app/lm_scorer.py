"""The language model run in this process to read log-probabilities of a given text: the
judge's likelihood gain (``AULA_JUDGE_LIKELIHOOD``, eval/likelihood.py) and the retriever's
query-likelihood rerank (``AULA_RERANK=likelihood``, corpus/rerank.py).

A GGUF file (the embedded LLM's by default) is read by the judge through llama.cpp in its
quantised form (``LlamaCppScorer``: memory-mapped, loaded in a second); the rerank reads it
through transformers (``TransformersScorer``), de-quantised into bfloat16 where the machine
computes bfloat16 natively, which is several times faster per passage there. A Hugging Face
folder is always read through transformers. One scorer per process for each (model, engine,
dtype), loaded on first use.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from corpus.errors import InputError
from eval.likelihood import TransformersScorer
from eval.llama_scorer import LlamaCppScorer


class EmbeddedScorer(TransformersScorer):
    """The embedded LLM's GGUF through transformers, put together from its parts on first use
    (a service that never needs it never loads it)."""

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


class EmbeddedLlamaScorer(LlamaCppScorer):
    """The embedded LLM's GGUF through llama.cpp, put together from its parts on first use."""

    def __init__(self, cache_dir: Path, **kw: Any) -> None:
        from app.embedded_llm import GGUF_NAME

        super().__init__(cache_dir / "models" / GGUF_NAME, **kw)
        self.cache_dir = cache_dir

    def _load(self) -> None:
        if self._ctx is None:
            from app.embedded_llm import assemble_gguf

            self.path = assemble_gguf(self.cache_dir)
        super()._load()


@functools.lru_cache(maxsize=4)
def scorer_for(choice: str, cache_dir: Path, *, engine: str = "llama.cpp",
               dtype: str = "float32", threads: int = 0,
               setting: str = "AULA_JUDGE_LIKELIHOOD"
               ) -> TransformersScorer | LlamaCppScorer | None:
    """The scorer ``choice`` names: "embedded", "off" (None), a model folder or a ``.gguf``
    file; a bad value is one error naming ``setting``. ``engine`` reads a GGUF: "llama.cpp"
    (quantised, ``threads``; its weights read from the mapped file as they are, without a
    repacked copy: 0.6 GB less for the embedded model, about 15% slower on 2 cores,
    docs/judges.md) or "transformers" (de-quantised into ``dtype``)."""
    choice = choice.strip()
    if choice in ("", "off"):
        return None
    llama = engine == "llama.cpp"
    if choice == "embedded":
        if llama:
            return EmbeddedLlamaScorer(cache_dir, threads=threads, setting=setting,
                                       repack=False)
        return EmbeddedScorer(cache_dir, dtype=dtype, setting=setting)
    path = Path(choice).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        if llama:
            return LlamaCppScorer(path, threads=threads, setting=setting, repack=False)
        return TransformersScorer(path.parent, gguf_file=path.name, dtype=dtype, setting=setting)
    if path.is_dir():
        return TransformersScorer(path, dtype=dtype, setting=setting)
    raise InputError(f"{setting}: {choice!r} is not 'embedded', 'off', a model folder or a "
                     ".gguf file")
