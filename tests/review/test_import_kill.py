"""``kill -9`` during a review import: a real process applying an import is killed half way
through the rows and after the last one (before the commit); the database keeps every previous
annotation, is sound, and takes the same import again."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.db import exchange, store
from app.db.session import Database, open_database
from tests.conftest import ROOT
from tests.review.conftest import answer_body
from tests.review.test_store import NOW

N = 300

# Applies the import in FILE to the database at URL the way `aula review import` does; with a
# stage named it stops there (printing "at STAGE") inside the open transaction.
CHILD = r"""
import sys, time
from datetime import UTC, datetime
from app.db import exchange, store
from app.db.session import open_database

url, path, stage = sys.argv[1:4]
db = open_database(url, migrate=False)
rows = exchange.parse_import(open(path, encoding="utf-8").read(), "csv")
apply, applied = store._apply, [0]

def stop():
    print("at", stage, flush=True)
    time.sleep(600)

def patched(*args, **kwargs):
    apply(*args, **kwargs)
    applied[0] += 1
    if stage == "half" and applied[0] == len(rows) // 2:
        stop()

store._apply = patched
with db.write() as s:
    store.import_annotations(s, rows, user="imp", now=datetime.now(UTC), source="import-csv")
    if stage == "all":
        stop()
print("done", flush=True)
"""


def snapshot(db: Database, ids: list[int]) -> list[tuple[Any, ...]]:
    with db.read() as s:
        return [(it["manual"], it["comment"], it["version"], len(store.history(s, i)))
                for i, it in ((i, store.get_item(s, i)) for i in ids)]


@pytest.fixture()
def annotated(tmp_path: Path) -> tuple[str, list[int], Path]:
    """N stored answers, every other one annotated; an import file that changes all N."""
    url = f"sqlite:///{tmp_path}/aula.db"
    db = open_database(url)
    with db.write() as s:
        ids = [store.save_answer(s, answer_body(f"pergunta {i}"), NOW) for i in range(N)]
        for i in ids[::2]:
            store.annotate(s, i, label="PC", comment=f"falta algo em {i}", version=1,
                           user="ana", now=NOW)
    with db.read() as s:
        versions = {it["id"]: it["version"] for it in store.export_items(s, annotated_only=False)}
    db.close()
    lines = ["id,manual,comment,version"]
    lines += [f"{i},I,\"errada, diz o importador ({i})\",{versions[i]}" for i in ids]
    path = tmp_path / "import.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return url, ids, path


def run_child(url: str, path: Path, stage: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, url, str(path), stage], cwd=ROOT, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def assert_sound_and_importable(url: str, ids: list[int], path: Path) -> None:
    con = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        con.close()
    db = open_database(url)
    try:
        with db.write() as s:
            res = store.import_annotations(s, exchange.parse_csv(path.read_text()), user="imp",
                                           now=NOW, source="import-csv")
        assert res.changed == N
        assert {a[0] for a in snapshot(db, ids)} == {"I"}
    finally:
        db.close()


@pytest.mark.parametrize("stage", ["half", "all"])
def test_kill_during_an_import_keeps_the_previous_annotations(
    annotated: tuple[str, list[int], Path], stage: str
) -> None:
    url, ids, path = annotated
    db = open_database(url)
    before = snapshot(db, ids)
    db.close()
    proc = run_child(url, path, stage)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert line.strip() == f"at {stage}", proc.stderr.read()  # type: ignore[union-attr]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    db = open_database(url)
    try:
        assert snapshot(db, ids) == before  # labels, comments, versions, history: all as before
    finally:
        db.close()
    assert_sound_and_importable(url, ids, path)


@pytest.mark.parametrize("delay", [0.8, 1.6])
def test_an_import_killed_by_the_clock_is_all_or_nothing(
    annotated: tuple[str, list[int], Path], delay: float
) -> None:
    """``aula review import`` itself, killed ``delay`` seconds after it starts."""
    url, ids, path = annotated
    db = open_database(url)
    before = snapshot(db, ids)
    db.close()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "review", "import", str(path)], cwd=ROOT, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "AULA_DATABASE_URL": url, "HF_HUB_OFFLINE": "1"},
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    db = open_database(url)
    try:
        after = snapshot(db, ids)
    finally:
        db.close()
    assert after == before or {a[0] for a in after} == {"I"}
