"""``aula judge`` as an instructor runs it on a set of answers with gold evidence (lecture span and
reference answer): answers a minute, the process's peak memory, and its labels' agreement with
the manual ones, for each way of judging, one after the other in one run:

- ``before``: the label model and judging of the previous release
  (``bench/data/labels_before.json``, every answer through the judge's LLM: AR's chain of thought,
  the claim check, the yes/no questions, beside the words and likelihood gains; ``--reasoning``);
- ``now``: ``aula judge`` as shipped: an answer with a reference is labelled from its words and
  likelihood gains alone (the label model's ``reference_read`` submodel), so the judge's LLM is
  not asked (and its server not started);
- ``reasoning`` (not run unless chosen): the shipped model with ``--reasoning``, which labels as
  ``before`` (the same submodels, fitted on the same answers, come first);
- ``transformers`` (not run unless chosen): ``before`` with the likelihood read de-quantised into
  float32 through transformers (``AULA_JUDGE_LIKELIHOOD_ENGINE=transformers``), as it was read
  before llama.cpp.

Answers: the first ``BENCH_JUDGE_SPEED_N`` (default 60: all) rows of
``bench/data/judge_fresh_3b1b.jsonl``, the judge's test part in a style no fitting answer has
(transcribed voice messages by a writer none of the fitting answers came from, to questions over
lectures no other set used; labels read blind), or with ``BENCH_JUDGE_SPEED_SET=notes`` of
``judge_notes_3b1b.jsonl`` (study notes by the third fitting writer: fitting answers since the
ordinal words-and-gains submodel, read as a test part before), judged against the 3b1b-pt index
(built once under ``bench/out/``). ``BENCH_JUDGE_SPEED_RUNS`` chooses the runs
(comma-separated; default ``before,now``). Each run is its own process, measured by a small
parent that reads its peak resident memory (the embedded LLM server runs inside it, so it is
counted); the judged items are kept in ``bench/out/judge_speed_<run>.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import (
    CORPUS_3B1B,
    DATA,
    OUT,
    embedded_embedder,
    env_int,
    label_figures,
    ready,
    report,
)

TEST_PARTS = {"notes": DATA / "judge_notes_3b1b.jsonl", "fresh": DATA / "judge_fresh_3b1b.jsonl"}
BEFORE = ["--thresholds", str(DATA / "labels_before.json"), "--reasoning"]
RUNS: dict[str, tuple[dict[str, str], list[str]]] = {
    "before": ({}, BEFORE),
    "now": ({}, []),
    "reasoning": ({}, ["--reasoning"]),
    "transformers": ({"AULA_JUDGE_LIKELIHOOD_ENGINE": "transformers"}, BEFORE),
}
DEFAULT_RUNS = "before,now"
METER = (
    "import json, resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    rc = subprocess.run(sys.argv[2:], stdout=out).returncode\n"
    "print(json.dumps({'rc': rc, 'seconds': time.perf_counter() - t,\n"
    "                  'peak_rss_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss"
    " / 1024}))\n"
)


def _judged(run: str, answers: Path, index: Path) -> tuple[dict[str, Any], list[Any]]:
    """One ``aula judge`` run: its meter's figures and its judged items."""
    out = OUT / f"judge_speed_{run}.json"
    env_more, args = RUNS[run]
    env = {**os.environ, "AULA_JUDGE_LIKELIHOOD": "embedded", **env_more}
    cmd = [sys.executable, "-c", METER, str(out), sys.executable, "-m", "app.cli", "judge",
           str(answers), "--index", str(index), "--json", *args]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    meter = json.loads(done.stdout.strip().splitlines()[-1])
    if meter["rc"] != 0:
        raise RuntimeError(f"aula judge ({run}) failed: {done.stderr[-2000:]}")
    return meter, json.loads(out.read_text())["items"]


def main() -> None:
    if not ready(CORPUS_3B1B):
        return
    from bench.common import read_jsonl
    from bench.retrieval_quality import index_3b1b

    figures: dict[str, Any] = {}
    store, _ = index_3b1b(embedded_embedder(), figures)
    part = os.environ.get("BENCH_JUDGE_SPEED_SET", "fresh")
    rows = read_jsonl(TEST_PARTS[part])[: env_int("BENCH_JUDGE_SPEED_N", 60)]
    figures["set"] = part
    answers = OUT / "judge_speed_answers.jsonl"
    answers.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    figures["answers"] = len(rows)
    chosen = os.environ.get("BENCH_JUDGE_SPEED_RUNS", DEFAULT_RUNS).split(",")
    for run in (r for r in chosen if r):
        meter, items = _judged(run, answers, Path(store.root))
        figures[f"{run}_answers_per_min"] = 60 * len(rows) / meter["seconds"]
        figures[f"{run}_peak_rss_mb"] = meter["peak_rss_mb"]
        figures[f"{run}_judge_llm_asked"] = sum(it.get("ar_score") is not None for it in items)
        manual = [it.get("manual") for it in items]
        for name, value in label_figures(manual, [it.get("automated") for it in items]).items():
            figures[f"{run}_{name}"] = value
    report("judge_speed", figures)


if __name__ == "__main__":
    main()
