"""Concurrent annotators over real HTTP, for the load test and ``bench/annotate.py``: each
logs in, then reads an item and saves a label with the version it read, again and again."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

import httpx

LABELS = ("C", "PC", "I")


@dataclass(frozen=True)
class Save:
    """One attempt: who, which item, the version sent, the answer's status, and the version
    after it (200) or the item's current version (409)."""

    user: str
    item: int
    sent: int
    status: int
    version: int
    label: str
    comment: str


def annotator(url: str, user: str, password: str, items: list[int], saves: int,
              seed: int, start: threading.Barrier | None = None) -> list[Save]:
    rng = random.Random(seed)
    done: list[Save] = []
    with httpx.Client(base_url=url, timeout=60) as c:
        r = c.post("/review/login", json={"name": user, "password": password})
        r.raise_for_status()
        c.headers["X-CSRF-Token"] = r.json()["csrf"]
        if start is not None:
            start.wait()
        for k in range(saves):
            item = rng.choice(items)
            got = c.get(f"/api/review/items/{item}")
            got.raise_for_status()
            sent = int(got.json()["version"])
            label = rng.choice(LABELS)
            comment = f"{user} nota {k}"
            r = c.put(f"/api/review/items/{item}/annotation",
                      json={"label": label, "comment": comment, "version": sent})
            body = r.json()
            version = (body.get("version") if r.status_code == 200
                       else (body.get("current") or {}).get("version", -1))
            done.append(Save(user, item, sent, r.status_code, int(version), label, comment))
    return done


def run_annotators(url: str, users: list[tuple[str, str]], items: list[int],
                   saves_each: int, seed: int = 0) -> tuple[list[Save], float]:
    """Every user annotating at once; all saves and the seconds from the start signal."""
    start = threading.Barrier(len(users) + 1)
    results: list[list[Save]] = [[] for _ in users]
    errors: list[BaseException] = []

    def work(n: int, user: str, password: str) -> None:
        try:
            results[n] = annotator(url, user, password, items, saves_each, seed * 100 + n,
                                   start)
        except BaseException as exc:  # noqa: BLE001 - reported to the caller below
            errors.append(exc)
            start.abort()

    threads = [threading.Thread(target=work, args=(n, u, p)) for n, (u, p) in enumerate(users)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return [s for r in results for s in r], seconds
