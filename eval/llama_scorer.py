"""Log-probabilities of a given text from a GGUF model in its quantised form, in this process.

llama.cpp's server returns log-probabilities only for the tokens it generates, never for a text
it is given, so the likelihood signals (``eval.likelihood``) read the model through llama.cpp's
own C library, the one the ``xllamacpp`` wheel already ships and the embedded LLM runs on: the
GGUF is memory-mapped as it is (about 1 GB for the embedded 1.5B model, shared with any other
process that maps the same file), the prompt and the reply are decoded in one batch, and the
logits of the reply's positions are read back. No de-quantised copy, no torch.

The C functions are called through ``ctypes``. Of the two parameter structs only the leading
fields are declared (the ones this module sets: context size, batch sizes, how many positions
return logits, threads); the rest of each struct is opaque padding that the library's own
defaults fill. The defaults are checked on load, so a library whose layout moved fails with one
clear error instead of reading the wrong field.

Between calls the decoded tokens stay in the context: a reply scored after a prompt that shares
its beginning with the previous one (the same system text and question, another reference)
decodes only what differs.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import threading
from pathlib import Path
from typing import Any

import numpy as np

from corpus.errors import InputError

log = logging.getLogger(__name__)

N_CTX = 4096
"""Tokens a prompt and its reply may take together (the longest judged conversation, lecture
text and answer cut as ``eval.likelihood`` cuts them, takes about 1,600)."""
N_BATCH = 512
"""Tokens decoded per call."""


class _ContextParams(ctypes.Structure):
    _fields_ = [
        ("n_ctx", ctypes.c_uint32),
        ("n_batch", ctypes.c_uint32),
        ("n_ubatch", ctypes.c_uint32),
        ("n_seq_max", ctypes.c_uint32),
        ("n_rs_seq", ctypes.c_uint32),
        ("n_outputs_max", ctypes.c_uint32),
        ("n_outputs_max_per_seq", ctypes.c_uint32),
        ("n_threads", ctypes.c_int32),
        ("n_threads_batch", ctypes.c_int32),
        ("_rest", ctypes.c_byte * 512),
    ]


class _ModelParams(ctypes.Structure):
    _fields_ = [("_opaque", ctypes.c_byte * 512)]


EXTRA_BUFTS_AT = 74
"""Where ``use_extra_bufts`` sits in this llama.cpp's ``llama_model_params`` (after its pointers
and ints, among its booleans, whose defaults ``MODEL_FLAGS`` are checked before it is set)."""
MODEL_FLAGS = (72, bytes([0, 0, 1, 0, 0, 0]))
"""The model parameters' boolean bytes from where they start, as this llama.cpp's defaults have
them: only then is ``EXTRA_BUFTS_AT`` that flag."""


def _without_repacking(params: _ModelParams) -> bool:
    """``params`` set not to keep a repacked copy of the weights (``use_extra_bufts`` off:
    the mapped file is read as it is); False, and unchanged, when the layout is not the one
    known here."""
    raw = bytes(params._opaque)
    at, flags = MODEL_FLAGS
    if raw[at:at + len(flags)] != flags:
        return False
    params._opaque[EXTRA_BUFTS_AT] = 0
    return True


class _Batch(ctypes.Structure):
    _fields_ = [
        ("n_tokens", ctypes.c_int32),
        ("token", ctypes.POINTER(ctypes.c_int32)),
        ("embd", ctypes.POINTER(ctypes.c_float)),
        ("pos", ctypes.POINTER(ctypes.c_int32)),
        ("n_seq_id", ctypes.POINTER(ctypes.c_int32)),
        ("seq_id", ctypes.POINTER(ctypes.POINTER(ctypes.c_int32))),
        ("logits", ctypes.POINTER(ctypes.c_int8)),
    ]


class _ChatMessage(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p)]


_LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


@_LOG_CALLBACK
def _quiet(level: int, text: bytes, data: int) -> None:  # llama.cpp's log lines, dropped
    return None


@functools.cache
def _library() -> ctypes.CDLL:
    """llama.cpp's library from the xllamacpp wheel, its functions typed (once a process)."""
    import xllamacpp

    path = next(Path(xllamacpp.__file__).parent.glob("xllamacpp*.so"), None)
    if path is None:
        raise InputError("AULA_JUDGE_LIKELIHOOD: the xllamacpp package has no llama.cpp library")
    lib = ctypes.CDLL(str(path))
    p, i32, u8 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_bool
    sigs: dict[str, tuple[Any, list[Any]]] = {
        "llama_backend_init": (None, []),
        "llama_log_set": (None, [_LOG_CALLBACK, p]),
        "llama_model_default_params": (_ModelParams, []),
        "llama_context_default_params": (_ContextParams, []),
        "llama_model_load_from_file": (p, [ctypes.c_char_p, _ModelParams]),
        "llama_init_from_model": (p, [p, _ContextParams]),
        "llama_model_get_vocab": (p, [p]),
        "llama_vocab_n_tokens": (i32, [p]),
        "llama_model_chat_template": (ctypes.c_char_p, [p, ctypes.c_char_p]),
        "llama_chat_apply_template": (i32, [ctypes.c_char_p, ctypes.POINTER(_ChatMessage),
                                            ctypes.c_size_t, u8, ctypes.c_char_p, i32]),
        "llama_tokenize": (i32, [p, ctypes.c_char_p, i32, ctypes.POINTER(i32), i32, u8, u8]),
        "llama_batch_init": (_Batch, [i32, i32, i32]),
        "llama_batch_free": (None, [_Batch]),
        "llama_decode": (i32, [p, _Batch]),
        "llama_get_logits_ith": (ctypes.POINTER(ctypes.c_float), [p, i32]),
        "llama_get_memory": (p, [p]),
        "llama_memory_seq_rm": (u8, [p, i32, i32, i32]),
        "llama_free": (None, [p]),
        "llama_model_free": (None, [p]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


class LlamaCppScorer:
    """A GGUF model read through llama.cpp in its quantised form (``path``: the .gguf file), one
    forward pass at a time; loaded on first use (a second or two: the file is memory-mapped).
    ``threads``: CPU threads of a pass (0: llama.cpp's default). ``setting`` is the setting
    named in load errors."""

    def __init__(self, path: Path | str, *, threads: int = 0,
                 setting: str = "AULA_JUDGE_LIKELIHOOD", repack: bool = True) -> None:
        self.path = Path(path)
        self.threads = threads
        self.repack = repack
        """False: the weights are read from the mapped file as they are, without llama.cpp's
        repacked copy for faster matrix products (about 0.6 GB less for the embedded model)."""
        self.setting = setting
        self._lock = threading.Lock()
        self._lib: ctypes.CDLL | None = None
        self._model: int | None = None
        self._ctx: int | None = None
        self._vocab: int | None = None
        self._n_vocab = 0
        self._template: bytes | None = None
        self._cached: list[int] = []

    @property
    def model_id(self) -> str:
        """The model and how it is read ("NAME@llama.cpp"): a label model fitted on gains of one
        scorer does not read another's (``eval.run.labelled``)."""
        return f"{self.path.stem}@llama.cpp"

    def _fail(self, why: str) -> InputError:
        return InputError(f"{self.setting}: the model at {self.path} cannot be loaded: {why}")

    def _load(self) -> None:
        if self._ctx is not None:
            return
        if not self.path.is_file():
            raise self._fail("no such file")
        lib = _library()
        lib.llama_log_set(_quiet, None)
        lib.llama_backend_init()
        cparams = lib.llama_context_default_params()
        if ((cparams.n_ctx, cparams.n_batch, cparams.n_ubatch, cparams.n_seq_max,
             cparams.n_outputs_max, cparams.n_outputs_max_per_seq) != (512, 2048, 512, 1, 0, 1)
                or cparams.n_threads <= 0):
            raise self._fail("the llama.cpp library's parameter layout is not the one this "
                             "version of Aula reads (check the xllamacpp version)")
        mparams = lib.llama_model_default_params()
        if not self.repack and not _without_repacking(mparams):
            log.warning("%s: this llama.cpp's model parameters are not laid out as Aula knows "
                        "them; its weights are repacked (more memory)", self.setting)
        model = lib.llama_model_load_from_file(str(self.path).encode(), mparams)
        if not model:
            raise self._fail("llama.cpp could not read it as a GGUF model")
        cparams.n_ctx, cparams.n_batch, cparams.n_ubatch = N_CTX, N_BATCH, N_BATCH
        cparams.n_outputs_max = cparams.n_outputs_max_per_seq = N_BATCH
        if self.threads > 0:
            cparams.n_threads = cparams.n_threads_batch = self.threads
        ctx = lib.llama_init_from_model(model, cparams)
        if not ctx:
            lib.llama_model_free(model)
            raise self._fail("llama.cpp could not make a context for it")
        self._lib, self._model, self._ctx = lib, model, ctx
        self._vocab = lib.llama_model_get_vocab(model)
        self._n_vocab = lib.llama_vocab_n_tokens(self._vocab)
        self._template = lib.llama_model_chat_template(model, None)

    def load(self) -> None:
        """Load the model now instead of on the first text scored."""
        with self._lock:
            self._load()

    def close(self) -> None:
        """Free the context and the model (a later call loads them again)."""
        with self._lock:
            if self._lib is not None and self._ctx is not None:
                self._lib.llama_free(self._ctx)
                self._lib.llama_model_free(self._model)
            self._ctx = self._model = None
            self._cached = []

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutting down
            pass

    def _prompt(self, messages: list[dict[str, str]]) -> str:
        assert self._lib is not None
        chat = (_ChatMessage * len(messages))(*(
            _ChatMessage(m["role"].encode(), m["content"].encode()) for m in messages))
        size = 2 * sum(len(m["content"].encode()) for m in messages) + 512
        for _ in range(2):
            buf = ctypes.create_string_buffer(size)
            n = self._lib.llama_chat_apply_template(self._template, chat, len(messages), True,
                                                    buf, size)
            if n < 0:
                raise self._fail("its chat template is not one llama.cpp knows")
            if n <= size:
                return buf.raw[:n].decode("utf-8", errors="replace")
            size = n + 1
        raise self._fail("its chat template output keeps growing")

    def _tokens(self, text: str, *, special: bool) -> list[int]:
        assert self._lib is not None
        data = text.encode()
        cap = len(data) + 8
        out = (ctypes.c_int32 * cap)()
        n = self._lib.llama_tokenize(self._vocab, data, len(data), out, cap, False, special)
        if n < 0:
            raise self._fail(f"a text of {len(data)} bytes does not tokenize")
        return list(out[:n])

    def _decode(self, tokens: list[int], start: int, wanted: range) -> dict[int, float]:
        """Decode ``tokens[start:]`` after the cached ``tokens[:start]``; for each position in
        ``wanted``, the log-probability of the token that follows it, read from that position's
        logits as they come (no vocabulary-wide row is kept)."""
        lib = self._lib
        assert lib is not None
        memory = lib.llama_get_memory(self._ctx)
        lib.llama_memory_seq_rm(memory, 0, start, -1)
        self._cached = tokens[:start]
        out: dict[int, float] = {}
        batch = lib.llama_batch_init(N_BATCH, 0, 1)
        try:
            for lo in range(start, len(tokens), N_BATCH):
                chunk = tokens[lo:lo + N_BATCH]
                batch.n_tokens = len(chunk)
                for j, tok in enumerate(chunk):
                    batch.token[j], batch.pos[j] = tok, lo + j
                    batch.n_seq_id[j], batch.seq_id[j][0] = 1, 0
                    batch.logits[j] = 1 if lo + j in wanted else 0
                if lib.llama_decode(self._ctx, batch) != 0:
                    self._cached = []
                    raise self._fail(f"decoding {len(tokens)} tokens failed (at most {N_CTX})")
                for j in range(len(chunk)):
                    if lo + j in wanted:
                        row = lib.llama_get_logits_ith(self._ctx, j)
                        logits = np.ctypeslib.as_array(row, (self._n_vocab,)).astype(np.float64)
                        top = logits.max()
                        norm = top + np.log(np.exp(logits - top).sum())
                        out[lo + j] = float(logits[tokens[lo + j + 1]] - norm)
                self._cached = tokens[:lo + len(chunk)]
        finally:
            lib.llama_batch_free(batch)
        return out

    def logprobs(self, messages: list[dict[str, str]], reply: str) -> list[float]:
        with self._lock:
            self._load()
            head = self._tokens(self._prompt(messages), special=True)
            tokens = (head + self._tokens(reply, special=False))[:N_CTX]
            if len(tokens) == len(head):  # no reply, or no room left for it
                return []
            same = 0
            for a, b in zip(self._cached, tokens, strict=False):
                if a != b:
                    break
                same += 1
            wanted = range(len(head) - 1, len(tokens) - 1)
            scored = self._decode(tokens, min(same, len(head) - 1), wanted)
            return [scored[i] for i in wanted]
