"""The index directory: FAISS index, segment table (Parquet), vectors and a manifest.

Layout::

    INDEX_DIR/CURRENT            name of the live version folder (replaced atomically)
    INDEX_DIR/v000003/manifest.json
    INDEX_DIR/v000003/segments.parquet   corpus_id, lecture_id, start, end, text, text_hash
    INDEX_DIR/v000003/lectures.parquet   lecture_id, title, url, course, source, fmt
    INDEX_DIR/v000003/vectors.npy        float32 [n, dim], rows aligned with segments
    INDEX_DIR/v000003/index.faiss        IndexIDMap over Flat-IP (or HNSW / IVF)
    INDEX_DIR/v000003/cues.parquet       lecture_id, start, end, text: the timed sentences (cues)
                                         the windows were cut from, for sentence-level focus
    INDEX_DIR/v000003/units.parquet      lecture_id, start, end, text, text_hash: short units
    INDEX_DIR/v000003/unit_vectors.npy   inside the windows (corpus.units) and their vectors

Every write builds a complete new version folder beside the live one and then swaps
``CURRENT``: an interrupted write leaves the previous version live and untouched.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from corpus.errors import InputError

FORMAT = 1
SEGMENT_COLUMNS = ["corpus_id", "lecture_id", "start", "end", "text", "text_hash"]
LECTURE_COLUMNS = ["lecture_id", "title", "url", "course", "source", "fmt"]
CUE_COLUMNS = ["lecture_id", "start", "end", "text"]
UNIT_COLUMNS = ["lecture_id", "start", "end", "text", "text_hash"]


def empty_cues() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(
        CUE_COLUMNS, ["str", "float64", "float64", "str"], strict=True)})


def empty_units() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(
        UNIT_COLUMNS, ["str", "float64", "float64", "str", "str"], strict=True)})


class IndexStoreError(RuntimeError):
    """A problem with the index directory, said in one line."""


class IndexNotFound(IndexStoreError):
    pass


class ModelMismatch(IndexStoreError):
    pass


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def faiss_module():  # type: ignore[no-untyped-def]
    import faiss

    return faiss


def gpu_count() -> int:
    faiss = faiss_module()
    try:
        return int(faiss.get_num_gpus()) if hasattr(faiss, "StandardGpuResources") else 0
    except Exception:  # noqa: BLE001 - a CPU build may lack the symbol entirely
        return 0


def build_faiss(vectors: np.ndarray, ids: np.ndarray, kind: str = "flat") -> Any:
    """An ID-mapped inner-product index over unit vectors (cosine)."""
    faiss = faiss_module()
    dim = vectors.shape[1]
    if kind == "flat":
        base = faiss.IndexFlatIP(dim)
    elif kind == "hnsw":
        base = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        base.hnsw.efConstruction = 80
        base.hnsw.efSearch = 64
    elif kind == "ivf":
        nlist = max(1, min(4096, int(np.sqrt(max(len(vectors), 1)))))
        quant = faiss.IndexFlatIP(dim)
        base = faiss.IndexIVFFlat(quant, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        if len(vectors):
            base.train(vectors)
        base.nprobe = min(nlist, 16)
    else:
        raise InputError(f"unknown index kind {kind!r} (flat, hnsw, ivf)")
    index = faiss.IndexIDMap(base)
    if len(vectors):
        index.add_with_ids(vectors, ids.astype(np.int64))
    return index


@dataclass
class IndexData:
    """One loaded version of the index directory."""

    manifest: dict[str, Any]
    segments: pd.DataFrame
    lectures: pd.DataFrame
    vectors: np.ndarray
    faiss_index: Any = None
    row_of: dict[int, int] = field(default_factory=dict)
    cues: pd.DataFrame | None = None
    """The timed cues of every lecture (None for an index written before they were kept)."""
    units: pd.DataFrame | None = None
    """The short units inside the windows (None for an index written without them)."""
    unit_vectors: np.ndarray | None = None
    live: str | None = None
    """The version folder this was loaded from (None for data not read from a folder)."""

    def __post_init__(self) -> None:
        self.row_of = {int(c): i for i, c in enumerate(self.segments["corpus_id"].tolist())}

    @property
    def model_id(self) -> str:
        return str(self.manifest.get("model_id", ""))

    @property
    def dim(self) -> int:
        return int(self.manifest.get("dim", 0))

    def lecture_meta(self) -> dict[str, dict[str, str]]:
        return lecture_meta(self.lectures)


def lecture_meta(lectures: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Lecture id -> its metadata row (``LECTURE_COLUMNS``, missing values as "")."""
    return {
        str(r["lecture_id"]): {k: ("" if pd.isna(r[k]) else str(r[k])) for k in LECTURE_COLUMNS}
        for _, r in lectures.iterrows()
    }


def empty_data(model_id: str, dim: int, params: dict[str, Any]) -> IndexData:
    manifest = {
        "format": FORMAT,
        "model_id": model_id,
        "dim": dim,
        "prefixes": {"query": "query: ", "passage": "passage: "},
        "segmentation": params.get("segmentation", {}),
        "index_kind": params.get("index_kind", "flat"),
        "next_id": 0,
        "version": 0,
    }
    segs = pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(
        SEGMENT_COLUMNS, ["int64", "str", "float64", "float64", "str", "str"], strict=True)})
    lecs = pd.DataFrame({c: pd.Series(dtype="str") for c in LECTURE_COLUMNS})
    return IndexData(manifest, segs, lecs, np.zeros((0, dim), np.float32), cues=empty_cues())


class IndexStore:
    """Reads and atomically writes versions of one index directory."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    # -- reading ---------------------------------------------------------------
    def current_dir(self) -> Path | None:
        pointer = self.root / "CURRENT"
        if not pointer.exists():
            return None
        path = self.root / pointer.read_text().strip()
        return path if (path / "manifest.json").exists() else None

    def exists(self) -> bool:
        return self.current_dir() is not None

    def lectures(self) -> dict[str, dict[str, str]]:
        """The live version's lectures (``lecture_meta``), read without its vectors; {} when
        there is no index."""
        live = self.current_dir()
        return {} if live is None else lecture_meta(pd.read_parquet(live / "lectures.parquet"))

    def live_version(self) -> str | None:
        """The name of the live version folder (one small read): it changes with every write,
        so a server compares it to notice a re-ingest by another process."""
        try:
            return (self.root / "CURRENT").read_text().strip() or None
        except OSError:
            return None

    def load(self, *, with_faiss: bool = True, use_gpu: bool | None = None) -> IndexData:
        """Load the live version; raises IndexNotFound with the directory named."""
        path = self.current_dir()
        if path is None:
            raise IndexNotFound(
                f"no index in {self.root}: build one with `aula ingest PATH --index {self.root}`"
            )
        manifest = json.loads((path / "manifest.json").read_text())
        segments = pd.read_parquet(path / "segments.parquet")
        lectures = pd.read_parquet(path / "lectures.parquet")
        vectors = np.load(path / "vectors.npy")
        cues = pd.read_parquet(path / "cues.parquet") if (path / "cues.parquet").exists() else None
        units, unit_vectors = None, None
        if (path / "units.parquet").exists():
            units = pd.read_parquet(path / "units.parquet")
            unit_vectors = np.load(path / "unit_vectors.npy")
        data = IndexData(manifest, segments, lectures, vectors, cues=cues, units=units,
                         unit_vectors=unit_vectors, live=path.name)
        if with_faiss:
            faiss = faiss_module()
            index = faiss.read_index(str(path / "index.faiss"))
            if (use_gpu if use_gpu is not None else gpu_count() > 0) and gpu_count() > 0:
                res = faiss.StandardGpuResources()
                index = faiss.index_cpu_to_gpu(res, 0, index)
            data.faiss_index = index
        return data

    def check_model(self, data: IndexData, model_id: str) -> None:
        if data.model_id != model_id:
            raise ModelMismatch(
                f"index {self.root} was built with embedding model {data.model_id!r} but the "
                f"configured model is {model_id!r}: use the same model (AULA_EMBED_MODEL) or "
                "re-ingest into a new index"
            )

    # -- writing ---------------------------------------------------------------
    @contextmanager
    def lock(self) -> Iterator[None]:
        """One writer at a time per index directory."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise IndexStoreError(f"another process is writing the index {self.root}") from exc
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def write(self, data: IndexData) -> Path:
        """Write ``data`` as a new version and make it live atomically."""
        self.root.mkdir(parents=True, exist_ok=True)
        version = int(data.manifest.get("version", 0)) + 1
        name = f"v{version:06d}"
        tmp = self.root / f".{name}.tmp-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        segs = data.segments.reset_index(drop=True)
        ids = segs["corpus_id"].to_numpy(np.int64)
        kind = str(data.manifest.get("index_kind", "flat"))
        index = build_faiss(data.vectors, ids, kind)
        faiss_module().write_index(index, str(tmp / "index.faiss"))
        segs.to_parquet(tmp / "segments.parquet", index=False)
        data.lectures.reset_index(drop=True).to_parquet(tmp / "lectures.parquet", index=False)
        np.save(tmp / "vectors.npy", data.vectors)
        if data.cues is not None:
            data.cues.reset_index(drop=True).to_parquet(tmp / "cues.parquet", index=False)
        if data.units is not None and data.unit_vectors is not None:
            data.units.reset_index(drop=True).to_parquet(tmp / "units.parquet", index=False)
            np.save(tmp / "unit_vectors.npy", data.unit_vectors)
        manifest = dict(data.manifest)
        manifest.update(
            version=version,
            updated=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            counts={"segments": int(len(segs)), "lectures": int(len(data.lectures))},
        )
        _write_atomic(tmp / "manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False))
        for path in tmp.iterdir():  # on disk before CURRENT can name them (a power cut)
            _fsync_file(path)
        _fsync_dir(tmp)
        final = self.root / name
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        old = self.current_dir()
        _write_atomic(self.root / "CURRENT", name + "\n")
        _fsync_dir(self.root)
        if old is not None and old != final:
            shutil.rmtree(old, ignore_errors=True)
        self._sweep(keep=final)
        data.manifest = manifest
        return final

    def sweep(self) -> None:
        """Remove what interrupted writes left beside the live version (``write`` does it
        too): for an ingest that writes nothing."""
        live = self.current_dir()
        if live is not None:
            self._sweep(keep=live)

    def _sweep(self, keep: Path) -> None:
        """Remove leftovers of interrupted writes."""
        for child in self.root.iterdir():
            if child == keep or not child.is_dir():
                continue
            if child.name.startswith(".v") and ".tmp-" in child.name:
                pid = child.name.rsplit("-", 1)[-1]
                if pid.isdigit() and _alive(int(pid)) and int(pid) != os.getpid():
                    continue
                shutil.rmtree(child, ignore_errors=True)
            elif child.name.startswith("v") and child.name[1:].isdigit():
                shutil.rmtree(child, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def merge_lectures(
    data: IndexData,
    updates: dict[str, tuple[dict[str, str], list[tuple[float, float, str]]]],
    embed: Any,
    *,
    progress: bool = False,
    cues: dict[str, list[tuple[float, float, str]]] | None = None,
    units: dict[str, list[tuple[float, float, str]]] | None = None,
) -> tuple[IndexData, dict[str, int]]:
    """Replace the segments of the lectures in ``updates`` and keep everything else as is.

    ``updates`` maps lecture id -> (metadata row, windows as (start, end, text)). A window equal
    to one already stored for that lecture (same start, end and text) keeps its corpus id and
    vector; new windows get fresh ids after the highest ever used, so no other segment is ever
    renumbered, and only new text is embedded. ``cues`` (lecture id -> timed sentences) replace
    the stored cues of those lectures; ``units`` (lecture id -> short units as (start, end,
    text)) replace their units, reusing the vectors of unchanged ones. Returns the new data and
    counts.
    """
    segs = data.segments
    touched = set(updates)
    keep_mask = ~segs["lecture_id"].isin(touched)
    kept_vecs = data.vectors[keep_mask.to_numpy()] if len(segs) else data.vectors
    fresh = _windows_to_store(data, keep_mask, updates)
    rows, vec_rows, to_embed = fresh.rows, fresh.vectors, fresh.to_embed
    if to_embed:
        embedded = embed([rows[i]["text"] for i in to_embed], progress=progress)
        for j, i in enumerate(to_embed):
            vec_rows[i] = embedded[j]
    dim = data.vectors.shape[1]
    new_vecs = (
        np.stack([v for v in vec_rows if v is not None]).astype(np.float32)
        if vec_rows else np.zeros((0, dim), np.float32)
    )
    all_segs, vectors = _by_corpus_id(segs[keep_mask], kept_vecs,
                                      pd.DataFrame(rows, columns=SEGMENT_COLUMNS), new_vecs)
    manifest = dict(data.manifest)
    manifest["next_id"] = fresh.next_id
    counts = {"embedded": len(to_embed), "reused": fresh.reused, "segments": len(rows)}
    unit_frame, unit_vecs, units_embedded = _merge_units(
        data, touched, units, embed, progress=progress)
    counts["units_embedded"] = units_embedded
    return IndexData(manifest, all_segs, _merged_lecture_rows(data.lectures, updates), vectors,
                     cues=_merge_cues(data.cues, touched, cues or {}),
                     units=unit_frame, unit_vectors=unit_vecs), counts


@dataclass
class _FreshWindows:
    """The segment rows of the updated lectures, in order, with the vectors they keep."""

    rows: list[dict[str, Any]]
    vectors: list[np.ndarray | None]
    """The stored vector of a window kept as it was; None for one still to embed."""
    to_embed: list[int]
    """Positions in ``rows`` of the windows to embed."""
    next_id: int
    reused: int


def _windows_to_store(data: IndexData, keep_mask: pd.Series,
                      updates: dict[str, tuple[dict[str, str], list[tuple[float, float, str]]]]
                      ) -> _FreshWindows:
    """Rows for the windows of ``updates``: an unchanged window keeps its corpus id and
    vector, a new one gets the next id and waits to be embedded."""
    segs = data.segments
    old = segs[~keep_mask]
    old_key = {
        (r.lecture_id, round(float(r.start), 3), round(float(r.end), 3), r.text_hash): i
        for i, r in zip(np.flatnonzero(~keep_mask.to_numpy()), old.itertuples(), strict=True)
    }
    out = _FreshWindows([], [], [], int(data.manifest.get("next_id", 0)), 0)
    for lecture_id, (_, windows) in updates.items():
        for start, end, text in windows:
            h = text_hash(text)
            hit = old_key.get((lecture_id, round(start, 3), round(end, 3), h))
            if hit is not None:
                cid = int(segs.iloc[hit]["corpus_id"])
                out.vectors.append(data.vectors[hit])
                out.reused += 1
            else:
                cid = out.next_id
                out.next_id += 1
                out.to_embed.append(len(out.rows))
                out.vectors.append(None)
            out.rows.append(
                {"corpus_id": cid, "lecture_id": lecture_id, "start": float(start),
                 "end": float(end), "text": text, "text_hash": h}
            )
    return out


def _by_corpus_id(kept: pd.DataFrame, kept_vecs: np.ndarray, new_segs: pd.DataFrame,
                  new_vecs: np.ndarray) -> tuple[pd.DataFrame, np.ndarray]:
    """The kept and the new segments (and their vectors) together, ordered by corpus id."""
    all_segs = pd.concat([kept, new_segs], ignore_index=True) if len(kept) else new_segs
    all_segs = all_segs.astype({"corpus_id": "int64", "start": "float64", "end": "float64"})
    vectors = np.concatenate([kept_vecs, new_vecs]) if len(kept_vecs) else new_vecs
    order = np.argsort(all_segs["corpus_id"].to_numpy(), kind="stable")
    all_segs = all_segs.iloc[order].reset_index(drop=True)
    return all_segs, np.ascontiguousarray(vectors[order], dtype=np.float32)


def _merged_lecture_rows(lectures: pd.DataFrame,
                         updates: dict[str, tuple[dict[str, str], Any]]) -> pd.DataFrame:
    """The lecture table with the updated lectures' rows replaced, sorted by id."""
    lecs = lectures[~lectures["lecture_id"].isin(set(updates))]
    new_lecs = pd.DataFrame([meta for meta, _ in updates.values()], columns=LECTURE_COLUMNS)
    merged = pd.concat([lecs, new_lecs], ignore_index=True) if len(lecs) else new_lecs
    return merged.sort_values("lecture_id").reset_index(drop=True)


def _merge_units(
    data: IndexData, touched: set[str], new: dict[str, list[tuple[float, float, str]]] | None,
    embed: Any, *, progress: bool = False,
) -> tuple[pd.DataFrame | None, np.ndarray | None, int]:
    """The stored units with those of ``touched`` lectures replaced by ``new``, unchanged units
    keeping their vectors. An index that kept no units keeps none unless no other lecture is
    left in it (re-ingest everything to add them)."""
    dim = data.vectors.shape[1]
    old, old_vecs = data.units, data.unit_vectors
    if new is None:
        return old, old_vecs, 0
    if old is None or old_vecs is None:
        if len(data.segments) and not data.segments["lecture_id"].isin(touched).all():
            return None, None, 0
        old, old_vecs = empty_units(), np.zeros((0, dim), np.float32)
    keep = ~old["lecture_id"].isin(touched).to_numpy()
    replaced = old[~keep]
    reuse = {(r.lecture_id, round(float(r.start), 3), round(float(r.end), 3), r.text_hash): i
             for i, r in zip(np.flatnonzero(~keep), replaced.itertuples(), strict=True)}
    rows: list[tuple[str, float, float, str, str]] = []
    vecs: list[np.ndarray | None] = []
    fresh: list[int] = []
    for lecture_id, spans in new.items():
        for start, end, text in spans:
            h = text_hash(text)
            at = reuse.get((lecture_id, round(start, 3), round(end, 3), h))
            if at is None:
                fresh.append(len(rows))
            vecs.append(None if at is None else old_vecs[at])
            rows.append((lecture_id, float(start), float(end), text, h))
    if fresh:
        embedded = embed([rows[i][3] for i in fresh], progress=progress)
        for j, i in enumerate(fresh):
            vecs[i] = embedded[j]
    new_frame = pd.DataFrame(rows, columns=UNIT_COLUMNS) if rows else empty_units()
    new_vecs = (np.stack(vecs).astype(np.float32) if vecs  # type: ignore[arg-type]
                else np.zeros((0, dim), np.float32))
    frame = pd.concat([old[keep], new_frame], ignore_index=True) if keep.any() else new_frame
    all_vecs = np.concatenate([old_vecs[keep], new_vecs]) if keep.any() else new_vecs
    order = np.lexsort((frame["start"].to_numpy(), frame["lecture_id"].to_numpy()))
    return (frame.iloc[order].reset_index(drop=True),
            np.ascontiguousarray(all_vecs[order], dtype=np.float32), len(fresh))


def _merge_cues(
    old: pd.DataFrame | None, touched: set[str], new: dict[str, list[tuple[float, float, str]]]
) -> pd.DataFrame | None:
    """The stored cues with those of ``touched`` lectures replaced by ``new``. An index kept no
    cues before: it keeps none, unless every lecture left in it comes with cues now."""
    rows = [(lid, float(a), float(b), t) for lid, cs in new.items() for a, b, t in cs]
    fresh = pd.DataFrame(rows, columns=CUE_COLUMNS) if rows else empty_cues()
    if old is None:
        return fresh if new else None
    kept = old[~old["lecture_id"].isin(touched)]
    merged = pd.concat([kept, fresh], ignore_index=True) if len(kept) else fresh
    return merged.sort_values(["lecture_id", "start"], kind="stable").reset_index(drop=True)


WRITE_STAMPS = ("version", "updated", "counts")
"""Manifest fields a write sets: not part of what an index holds."""


def same_content(a: IndexData, b: IndexData) -> bool:
    """Whether ``a`` and ``b`` hold the same index (windows with their ids and vectors,
    lectures, cues, units, settings), whatever version and time each was written at: an ingest
    that changes nothing need not write a version that every server would then reload."""
    def stamped(m: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in m.items() if k not in WRITE_STAMPS}

    def rows(frame: pd.DataFrame | None) -> list[tuple[Any, ...]] | None:
        if frame is None:
            return None
        return [tuple(None if v is None or (isinstance(v, float) and math.isnan(v)) else v
                      for v in r) for r in frame.itertuples(index=False)]

    def same_array(x: np.ndarray | None, y: np.ndarray | None) -> bool:
        if x is None or y is None:
            return x is None and y is None
        return bool(np.array_equal(x, y))

    return (stamped(a.manifest) == stamped(b.manifest)
            and rows(a.segments) == rows(b.segments)
            and rows(a.lectures) == rows(b.lectures)
            and rows(a.cues) == rows(b.cues) and rows(a.units) == rows(b.units)
            and same_array(a.vectors, b.vectors) and same_array(a.unit_vectors, b.unit_vectors))


def remove_lectures(data: IndexData, lecture_ids: list[str]) -> IndexData:
    """Drop lectures and their segments; other corpus ids stay as they are."""
    missing = [lid for lid in lecture_ids if lid not in set(data.lectures["lecture_id"])]
    if missing:
        raise IndexStoreError(f"no lecture {missing[0]!r} in the index")
    mask = ~data.segments["lecture_id"].isin(lecture_ids)
    lectures = data.lectures[~data.lectures["lecture_id"].isin(lecture_ids)]
    cues = data.cues
    if cues is not None:
        cues = cues[~cues["lecture_id"].isin(lecture_ids)].reset_index(drop=True)
    units, unit_vectors = data.units, data.unit_vectors
    if units is not None and unit_vectors is not None:
        keep = ~units["lecture_id"].isin(lecture_ids).to_numpy()
        units = units[keep].reset_index(drop=True)
        unit_vectors = np.ascontiguousarray(unit_vectors[keep])
    return IndexData(
        dict(data.manifest),
        data.segments[mask].reset_index(drop=True),
        lectures.reset_index(drop=True),
        np.ascontiguousarray(data.vectors[mask.to_numpy()]),
        cues=cues,
        units=units,
        unit_vectors=unit_vectors,
    )
