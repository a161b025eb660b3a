"""Where the windows are searched: the index folder (the default) or Milvus.

The index folder (``corpus.index``) is always the catalogue: segment table, timed cues, short
units, lectures and the manifest, versioned and written atomically. A vector store answers the
two window channels of retrieval, each as corpus ids with scores, best first:

- ``dense``: E5 cosine (inner product of unit vectors) with the question;
- ``lexical``: BM25 with our Portuguese tokenizer (``corpus.bm25``).

``FolderStore`` (``AULA_VECTOR_STORE=faiss``) searches the folder's FAISS index and an in-memory
BM25, in each server process. ``MilvusStore`` (``AULA_VECTOR_STORE=milvus``) keeps the windows in
one Milvus collection that every process and host shares: a dense field (the E5 vector), a
sparse field (the BM25 document weights, computed here so that the scores are the folder's own
on milvus-lite and on a Milvus server alike), and the lecture, course and times as scalar
fields for filters. Ids are the catalogue's corpus ids, stable across re-ingest; ``sync`` makes
the collection hold exactly a catalogue version (upsert every window, delete the ones gone).
``hybrid`` asks Milvus to fuse the two fields itself (its RRF or weighted ranker).

The units' channels stay in the retriever's memory, over the catalogue's unit vectors.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from corpus.bm25 import BM25Index, BM25Weights
from corpus.fusion import top_pool

if TYPE_CHECKING:
    from corpus.index import IndexData

log = logging.getLogger(__name__)

Ranked = tuple[np.ndarray, np.ndarray]
"""Corpus ids (int64) and scores (float64), best first."""

EMPTY: Ranked = (np.zeros(0, np.int64), np.zeros(0, np.float64))
BATCH = 512  # rows per Milvus upsert
MAX_VARCHAR = 1024


class VectorStoreError(RuntimeError):
    """A vector store that cannot be used, said in one line with its address."""


class VectorStore(Protocol):
    name: str

    def dense(self, qv: np.ndarray, pool: int, lectures: Sequence[str] | None = None
              ) -> Ranked: ...

    def lexical(self, query: str, pool: int, lectures: Sequence[str] | None = None
                ) -> Ranked: ...

    def close(self) -> None: ...


def cosines(rows: np.ndarray, qv: np.ndarray) -> np.ndarray:
    """``rows @ qv`` without BLAS. numpy's BLAS threads keep spinning after a product and
    starve the query embedder's own threads: measured on 2 cores, the next E5 query took 90-110
    ms instead of 35 after a BLAS product over 9,300 unit vectors, and 32-36 ms after this
    single-threaded loop (6 ms for the whole search)."""
    return np.einsum("ij,j->i", rows, qv, optimize=False)


def _top(scores: np.ndarray, ids: np.ndarray, pool: int) -> Ranked:
    rows, best = top_pool(scores, pool)
    return ids[rows].astype(np.int64), best.astype(np.float64)


class FolderStore:
    """The index folder's FAISS index and a BM25 over its windows, in this process."""

    name = "faiss"

    def __init__(self, data: IndexData) -> None:
        segs = data.segments
        self.data = data
        self.ids = segs["corpus_id"].to_numpy(np.int64)
        self.lecture = segs["lecture_id"].to_numpy()
        self.bm25 = BM25Index(self.ids.tolist(), segs["text"].tolist()) if len(segs) else None

    def _mask(self, lectures: Sequence[str] | None) -> np.ndarray | None:
        return np.isin(self.lecture, list(lectures)) if lectures else None

    def dense(self, qv: np.ndarray, pool: int, lectures: Sequence[str] | None = None
              ) -> Ranked:
        index, mask = self.data.faiss_index, self._mask(lectures)
        if mask is not None or index is None:  # exact scores (over the chosen lectures)
            scores = cosines(self.data.vectors, qv)
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            return _top(scores, self.ids, pool)
        dist, found = index.search(qv.reshape(1, -1).astype(np.float32), pool)
        keep = found[0] >= 0
        return found[0][keep].astype(np.int64), dist[0][keep].astype(np.float64)

    def lexical(self, query: str, pool: int, lectures: Sequence[str] | None = None) -> Ranked:
        if self.bm25 is None:
            return EMPTY
        found = self.bm25.search(query, pool, self._mask(lectures))
        return (np.array([c for c, _ in found], np.int64),
                np.array([v for _, v in found], np.float64))

    def close(self) -> None:
        pass


# Milvus's expression strings take \\ \" \n \r \t as escapes and every other character as
# itself (a JSON \uXXXX escape is refused: "unknown escape sequence"; milvus-lite has no
# filter templates to pass values apart from the expression).
_MILVUS_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r",
                                 "\t": "\\t"})


def milvus_string(value: str) -> str:
    """``value`` as a Milvus expression string literal: quotes cannot end it early."""
    return '"' + str(value).translate(_MILVUS_ESCAPES) + '"'


def milvus_filter(lectures: Sequence[str] | None = None,
                  courses: Sequence[str] | None = None) -> str:
    """A Milvus boolean expression limiting rows to these lectures and courses ("" for all);
    any id (accents, quotes, line breaks) is one literal that matches only itself."""
    parts = []
    if lectures:
        parts.append(f"lecture_id in [{', '.join(milvus_string(x) for x in lectures)}]")
    if courses:
        parts.append(f"course in [{', '.join(milvus_string(x) for x in courses)}]")
    return " and ".join(parts)


class MilvusStore:
    """The windows in one Milvus collection, shared by every server process and host.

    ``uri``: a Milvus server (``http://host:19530``, with ``token`` when it asks for one), or a
    local file ending in ``.db`` (milvus-lite, inside this process). ``texts``: the catalogue's
    window texts, whose statistics turn a query into its BM25 sparse vector.
    """

    name = "milvus"

    def __init__(self, uri: str, collection: str = "aula_windows", *, token: str | None = None,
                 texts: Sequence[str] | None = None) -> None:
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:  # pragma: no cover - pymilvus is a dependency
            raise VectorStoreError("AULA_VECTOR_STORE=milvus needs pymilvus "
                                   "(pip install pymilvus milvus-lite)") from exc
        logging.getLogger("pymilvus").setLevel(logging.ERROR)  # not its client-side notes
        self.uri = uri
        self.collection = collection
        remote = uri.startswith(("http://", "https://", "tcp://", "unix:"))
        if not remote:
            Path(uri).parent.mkdir(parents=True, exist_ok=True)  # milvus-lite: a local file
        try:
            # A server connection of this store's own, closed with it, on subchannels of its
            # own: pymilvus otherwise keeps one shared channel per address after its clients
            # close (and gRPC shares subchannels between like channels), which a server that
            # limits keepalive pings drops while idle, and the next store inherits it broken.
            own = {"dedicated": True,
                   "grpc_options": {"grpc.use_local_subchannel_pool": 1}} if remote else {}
            self.client = MilvusClient(uri=uri, token=token or "", **own)
            if self.exists():
                self.client.load_collection(collection)  # a restarted server keeps it released
        except Exception as exc:  # noqa: BLE001 - pymilvus raises several kinds
            raise VectorStoreError(f"cannot reach Milvus at {uri}: {exc}") from exc
        self.weights = BM25Weights(texts) if texts is not None else None

    def for_texts(self, texts: Sequence[str]) -> MilvusStore:
        """The same collection through the same client, with the lexical statistics of another
        catalogue version (a server that reloads the index keeps one connection; closing
        either closes it)."""
        view = copy.copy(self)
        view.weights = BM25Weights(texts)
        return view

    # -- reading ---------------------------------------------------------------------------
    def exists(self) -> bool:
        return bool(self.client.has_collection(self.collection))

    def count(self) -> int:
        if not self.exists():
            return 0
        rows = self.client.query(self.collection, filter="", output_fields=["count(*)"])
        return int(rows[0]["count(*)"])

    def _search(self, data: list[Any], field: str, pool: int, lectures: Sequence[str] | None
                ) -> Ranked:
        if pool <= 0:
            return EMPTY
        try:
            res = self.client.search(self.collection, data, anns_field=field, limit=pool,
                                     filter=milvus_filter(lectures), output_fields=[],
                                     search_params={"metric_type": "IP"})
        except Exception as exc:  # noqa: BLE001 - pymilvus raises several kinds
            if not self.exists():
                return EMPTY  # nothing ingested into the collection yet
            raise VectorStoreError(f"Milvus at {self.uri}, collection {self.collection!r}: "
                                   f"{exc}") from exc
        return _ranked(res[0] if res else [])

    def dense(self, qv: np.ndarray, pool: int, lectures: Sequence[str] | None = None
              ) -> Ranked:
        return self._search([np.asarray(qv, np.float32).tolist()], "dense", pool, lectures)

    def lexical(self, query: str, pool: int, lectures: Sequence[str] | None = None) -> Ranked:
        sparse = self.weights.query(query) if self.weights is not None else {}
        if not sparse:
            return EMPTY
        return self._search([sparse], "sparse", pool, lectures)

    def hybrid(self, qv: np.ndarray, query: str, pool: int,
               lectures: Sequence[str] | None = None, *,
               weights: tuple[float, float] | None = None, rrf_k: int = 60) -> Ranked:
        """Both fields searched and fused by Milvus: weighted (``weights`` for dense and
        lexical) or reciprocal rank fusion (``rrf_k``)."""
        from pymilvus import AnnSearchRequest, RRFRanker, WeightedRanker

        if not self.exists():
            return EMPTY
        expr = milvus_filter(lectures)
        reqs = [AnnSearchRequest([np.asarray(qv, np.float32).tolist()], "dense",
                                 {"metric_type": "IP"}, pool, expr=expr)]
        sparse = self.weights.query(query) if self.weights is not None else {}
        if sparse:
            reqs.append(AnnSearchRequest([sparse], "sparse", {"metric_type": "IP"}, pool,
                                         expr=expr))
        ranker = (WeightedRanker(*(weights[: len(reqs)])) if weights is not None
                  else RRFRanker(rrf_k))
        res = self.client.hybrid_search(self.collection, reqs, ranker, limit=pool,
                                        output_fields=[])
        return _ranked(res[0] if res else [])

    # -- writing ---------------------------------------------------------------------------
    def _create(self, dim: int) -> None:
        from pymilvus import DataType

        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("lecture_id", DataType.VARCHAR, max_length=MAX_VARCHAR)
        schema.add_field("course", DataType.VARCHAR, max_length=MAX_VARCHAR)
        schema.add_field("start", DataType.DOUBLE)
        schema.add_field("end", DataType.DOUBLE)
        schema.add_field("text_hash", DataType.VARCHAR, max_length=64)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        index = self.client.prepare_index_params()
        index.add_index("dense", index_type="AUTOINDEX", metric_type="IP")
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
        self.client.create_collection(self.collection, schema=schema, index_params=index,
                                      consistency_level="Strong")

    def stored_ids(self) -> set[int]:
        if not self.exists():
            return set()
        it = self.client.query_iterator(self.collection, batch_size=1000, filter="",
                                        output_fields=["id"])
        out: set[int] = set()
        try:
            while batch := it.next():
                out.update(int(r["id"]) for r in batch)
        finally:
            it.close()
        return out

    def sync(self, data: IndexData, *, progress: bool = False) -> dict[str, int]:
        """Make the collection hold exactly ``data``'s windows: every window written (the
        lexical weights depend on the whole corpus), the ones no longer in ``data`` deleted.
        Idempotent: an interrupted sync is finished by the next one."""
        segs = data.segments.reset_index(drop=True)
        if not self.exists():
            self._create(int(data.vectors.shape[1]) if data.vectors.ndim == 2 else data.dim)
        elif (dim := self._dim()) and data.vectors.shape[1] != dim:
            raise VectorStoreError(
                f"Milvus collection {self.collection!r} at {self.uri} holds {dim}-dimensional "
                f"vectors, the index {data.vectors.shape[1]}: use another AULA_MILVUS_COLLECTION "
                "or drop it")
        weights = BM25Weights(segs["text"].tolist())
        course = {str(r["lecture_id"]): str(r["course"] or "") for _, r in
                  data.lectures.iterrows()} if len(data.lectures) else {}
        before = self.stored_ids()
        ids = segs["corpus_id"].to_numpy(np.int64)
        for lo in _batches(len(segs), progress):
            rows = [{"id": int(ids[i]), "lecture_id": str(segs.at[i, "lecture_id"]),
                     "course": course.get(str(segs.at[i, "lecture_id"]), "")[:MAX_VARCHAR],
                     "start": float(segs.at[i, "start"]), "end": float(segs.at[i, "end"]),
                     "text_hash": str(segs.at[i, "text_hash"]),
                     "dense": data.vectors[i].astype(np.float32).tolist(),
                     "sparse": weights.document(i) or {0: 0.0}}
                    for i in range(lo, min(lo + BATCH, len(segs)))]
            self.client.upsert(self.collection, rows)
        gone = sorted(before - set(ids.tolist()))
        for lo in range(0, len(gone), BATCH):
            self.client.delete(self.collection, ids=gone[lo: lo + BATCH])
        self.weights = weights
        return {"written": int(len(segs)), "deleted": len(gone)}

    def _dim(self) -> int:
        info = self.client.describe_collection(self.collection)
        for f in info.get("fields", []):
            if f.get("name") == "dense":
                return int(f.get("params", {}).get("dim", 0))
        return 0

    def drop(self) -> None:
        if self.exists():
            self.client.drop_collection(self.collection)

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # noqa: BLE001 - closing a client that lost its server
            pass


def _ranked(hits: Any) -> Ranked:
    if not hits:
        return EMPTY
    return (np.array([int(h["id"]) for h in hits], np.int64),
            np.array([float(h["distance"]) for h in hits], np.float64))


def _batches(n: int, progress: bool) -> Iterator[int]:
    starts = range(0, n, BATCH)
    if not progress:
        return iter(starts)
    from tqdm import tqdm

    return iter(tqdm(starts, desc="milvus", unit="lote"))


def open_vector_store(settings: Any, data: IndexData | None = None, *,
                      shared: MilvusStore | None = None) -> VectorStore:
    """The store the settings name, over ``data`` (the folder's, loaded) when given;
    ``shared``: a Milvus store already connected, re-used with ``data``'s statistics."""
    kind = getattr(settings.index, "vector_store", "faiss")
    if kind == "milvus":
        if shared is not None and data is not None:
            return shared.for_texts(data.segments["text"].tolist())
        return MilvusStore(milvus_uri(settings), settings.index.milvus_collection,
                           token=settings.index.milvus_token,
                           texts=data.segments["text"].tolist() if data is not None else None)
    if data is None:
        raise VectorStoreError("the folder store needs the loaded index")
    return FolderStore(data)


def milvus_uri(settings: Any) -> str:
    """``AULA_MILVUS_URI``, or milvus-lite in ``INDEX_DIR/milvus.db`` for one machine."""
    return settings.index.milvus_uri or str(settings.index.dir / "milvus.db")
