"""``kill -9`` during ``IndexStore.write``: a real process writing a big index is killed at each
step of the write (files half written, version complete but not renamed, renamed but not live,
live but the old version not yet removed) and at moments picked by a clock; the index then
loads, searches, and takes the next ingest."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpus.index import IndexStore
from corpus.ingest import ingest
from corpus.retrieve import Retriever
from tests.conftest import ROOT, SAMPLES

BIG = 8_000  # windows in the new lecture: a write of about 15 MB

# The child merges a big lecture into the index and writes it. With a stage named, it stops at
# that point of IndexStore.write (printing "at STAGE") and waits to be killed.
CHILD = r"""
import os, shutil, sys, time
import numpy as np
from corpus import index as ix

root, stage, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

def stop():
    print("at", stage, flush=True)
    time.sleep(600)

store = ix.IndexStore(root)
data = store.load(with_faiss=False)
old = store.current_dir()
dim = data.vectors.shape[1]
vecs = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)
vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
meta = {"lecture_id": "grande", "title": "Grande", "url": "", "course": "", "source": "-",
        "fmt": "srt"}
windows = [(i * 10.0, i * 10.0 + 120.0, f"janela {i} sobre integrais") for i in range(n)]
new, _ = ix.merge_lectures(data, {"grande": (meta, windows)},
                           lambda texts, progress=False: vecs[: len(texts)])

save, replace, rmtree = np.save, os.replace, shutil.rmtree
calls = {"replace": 0}

def patched_save(path, *args, **kwargs):
    save(path, *args, **kwargs)
    if stage == "data" and str(path).endswith("vectors.npy"):
        stop()  # some files of the new version written, manifest not yet

def patched_replace(src, dst):
    calls["replace"] += 1  # 1: the manifest, 2: the version folder, 3: CURRENT
    if (stage, calls["replace"]) in (("complete", 2), ("renamed", 3)):
        stop()
    replace(src, dst)

def patched_rmtree(path, *args, **kwargs):
    if stage == "live" and os.path.abspath(path) == os.path.abspath(old):
        stop()  # CURRENT names the new version; the old one is still there
    rmtree(path, *args, **kwargs)

if stage != "none":
    ix.np.save, ix.os.replace, ix.shutil.rmtree = patched_save, patched_replace, patched_rmtree
store.write(new)
print("done", flush=True)
"""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("kill") / "index"
    ingest([SAMPLES / "derivadas"], IndexStore(root), embedder)
    return root


@pytest.fixture()
def index(template: Path, tmp_path: Path) -> IndexStore:
    shutil.copytree(template, tmp_path / "index", symlinks=True)
    return IndexStore(tmp_path / "index")


def start_writer(store: IndexStore, stage: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(store.root), stage, str(BIG)], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def assert_usable(store: IndexStore, embedder, *, new_live: bool) -> None:  # type: ignore[no-untyped-def]
    """The index loads (FAISS included), answers from the lectures it should hold, and takes
    the next ingest, which also sweeps what the killed writer left behind."""
    data = store.load()
    lectures = sorted(data.lectures.lecture_id)
    assert lectures == (["derivadas", "grande"] if new_live else ["derivadas"])
    assert len(data.segments) == len(data.vectors) == data.faiss_index.ntotal
    hits = Retriever(data, embedder).search("qual a derivada de x ao quadrado?", 3)
    assert hits and hits[0].lecture_id == "derivadas"
    summary = ingest([SAMPLES / "derivadas"], store, embedder)  # the next write
    assert summary.embedded == 0 and summary.total_lectures == len(lectures)
    assert sorted(store.load().lectures.lecture_id) == lectures
    left = sorted(p.name for p in store.root.iterdir() if p.is_dir())
    assert left == [store.current_dir().name]  # type: ignore[union-attr]


@pytest.mark.parametrize(("stage", "new_live"), [
    ("data", False), ("complete", False), ("renamed", False), ("live", True),
])
def test_kill_at_each_step_of_a_write(index: IndexStore, embedder, stage: str,  # type: ignore[no-untyped-def]
                                      new_live: bool) -> None:
    before = index.current_dir()
    proc = start_writer(index, stage)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert line.strip() == f"at {stage}", proc.stderr.read()  # type: ignore[union-attr]
    kill(proc)
    assert (index.current_dir() != before) is new_live
    assert_usable(index, embedder, new_live=new_live)


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.2])
def test_kill_at_a_moment_picked_by_the_clock(index: IndexStore, embedder,  # type: ignore[no-untyped-def]
                                              delay: float) -> None:
    """Killed ``delay`` seconds after the new version's folder appears: whatever the write had
    done by then, the index is either the old one or the new one, whole."""
    before = index.current_dir()
    proc = start_writer(index, "none")
    deadline = time.monotonic() + 120
    while not any(p.name.startswith(".v") for p in index.root.iterdir()):
        assert proc.poll() is None, proc.stderr.read()  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.001)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)  # a writer that finished first has its own exit code
    proc.wait(timeout=30)
    assert proc.returncode in (0, -signal.SIGKILL), proc.stderr.read()  # type: ignore[union-attr]
    assert_usable(index, embedder, new_live=index.current_dir() != before)
