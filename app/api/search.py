"""``GET /search``, ``GET /segments/{id}``, ``GET /lectures``, ``GET /health``."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Request

from app.deps import RetrieverDep, ServicesDep
from app.ratelimit import spend
from app.schemas import (
    MAX_LECTURES,
    NO_NUL,
    HealthOut,
    HitOut,
    LectureId,
    LectureOut,
    SearchOut,
    error_responses,
)

router = APIRouter(tags=["search"])


@router.get("/search", response_model=SearchOut, summary="Retrieve segments for a query",
            responses=error_responses(429))
def search(
    request: Request,
    retriever: RetrieverDep,
    q: Annotated[str, Query(min_length=1, max_length=2000, pattern=NO_NUL,
                            description="The query (no NUL character)")],
    k: Annotated[int, Query(ge=1, le=50)] = 10,
    mode: Literal["dense", "bm25", "hybrid"] | None = None,
    lecture: Annotated[list[LectureId] | None,
                       Query(max_length=MAX_LECTURES, description="Only these lecture ids")] = None,
) -> SearchOut:
    spend(request, "search")  # per client address, once the query is valid
    res = retriever.search_timed(q, k, mode=mode, lectures=lecture)
    return SearchOut(
        query=q,
        mode=mode or retriever.mode,
        hits=[HitOut(**h.to_dict()) for h in res.hits],
        timings={"embedding": res.timings.embed_s, "search": res.timings.search_s},
    )


@router.get("/segments/{corpus_id}", response_model=HitOut, summary="One stored segment",
            responses=error_responses(404))
def segment(corpus_id: int, retriever: RetrieverDep) -> HitOut:
    hit = retriever.segment(corpus_id)
    if hit is None:
        raise HTTPException(404, f"no segment with corpus id {corpus_id}")
    return HitOut(**hit.to_dict())


@router.get("/lectures", response_model=list[LectureOut], summary="Lectures in the index")
def lectures(retriever: RetrieverDep) -> list[LectureOut]:
    data = retriever.data
    counts = data.segments.groupby("lecture_id").size().to_dict()
    return [
        LectureOut(
            lecture_id=lid, title=m["title"], url=m["url"], course=m["course"],
            segments=int(counts.get(lid, 0)),
        )
        for lid, m in data.lecture_meta().items()
    ]


@router.get("/health", response_model=HealthOut, summary="Liveness and what is loaded")
def health(services: ServicesDep) -> HealthOut:
    retriever = services.retriever
    data = retriever.data
    return HealthOut(
        status="ok",
        lectures=len(data.lectures),
        segments=len(data.segments),
        embedding_model=data.model_id,
        llm_model=getattr(services.llm, "model_id", "") or "",
        llm=_llm_kind(services.llm_endpoint),
        vector_store=retriever.store.name,
        index_version=data.live,
    )


def _llm_kind(endpoint: str) -> str:
    """What ``/health`` may say of the LLM: its URL can hold a key or an internal address."""
    if not endpoint:
        return "none"
    return "embedded" if endpoint == "embedded" else "remote"
