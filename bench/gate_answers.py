"""What students get from the quote strategy under the adapted gate read from other samples,
without answering again.

The quote path gives one question the same text whichever gate passes it (the gate decides
whether to quote, not what), so a question the gate passes gets the answer of a stored bench
run in which a gate passed it, labelled by the stored blind labels; a question no stored run
quoted is listed as unknown (answer it and read it). Samples come from ``aula fit-gate
--samples`` over an index whose ``adapted/model`` is the model to try (a copy of the bench's
index with another model), the items from ``BENCH_ANSWER_STRATEGIES=quote-adapted`` or
``quote`` runs of the answer bench (the first file's course-check declines are kept).

    python -m bench.gate_answers --split fit --items A.jsonl [B.jsonl ...] SAMPLES.jsonl [...]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from answer.evidence import Gate, GateSample, read_samples
from answer.pipeline import SAID_IN_LECTURES
from bench.answer_quality import SETS, stored_labels, text_key
from bench.common import read_jsonl

QUOTED = ("quote", "quote-adapted")


def quoted_runs(paths: Sequence[Path]) -> tuple[dict[tuple[str, str], dict[str, Any]],
                                                set[tuple[str, str]]]:
    """Per (set, question): the first stored item whose gate passed it, and the questions
    the course check declined (in the first file)."""
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    course: set[tuple[str, str]] = set()
    for n, path in enumerate(paths):
        for r in read_jsonl(path):
            if r.get("id") == "warm-up" or r.get("strategy") not in QUOTED:
                continue
            reason = str(r.get("reason", ""))
            if reason.startswith("course question") and SAID_IN_LECTURES not in reason:
                if n == 0:
                    course.add((r["set"], r["id"]))
                continue
            if "to quote" in reason or " < " in reason.split(";")[0]:
                continue  # a gate declined it there
            runs.setdefault((r["set"], r["id"]), r)
    return runs, course


def figures(set_name: str, split: str, samples: dict[str, GateSample], gate: Gate,
            runs: dict[tuple[str, str], dict[str, Any]], course: set[tuple[str, str]],
            labels: dict[str, str]) -> dict[str, Any]:
    """C / PC / I / declined over the answerable questions of one set's ``split``, uncovered
    answered, and the questions no stored run quoted."""
    out: dict[str, Any] = {"C": 0, "PC": 0, "I": 0, "declined": 0, "uncovered_answered": 0,
                           "unknown": []}
    for q in read_jsonl(SETS[set_name][0]):
        x = samples.get(q["id"])
        if q.get("split") != split or x is None:
            continue
        key = (set_name, q["id"])
        if key in course or gate.p_covered_of(x.feats) < gate.min_p:
            out["declined"] += x.answerable
            continue
        if (r := runs.get(key)) is None:
            out["unknown"].append(q["id"])
        elif not r["answered"]:
            out["declined"] += x.answerable
        elif not x.answerable:
            out["uncovered_answered"] += 1
        else:
            label = labels.get(text_key(r["key"]), "unlabelled")
            out[label] = out.get(label, 0) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("samples", nargs="+", type=Path)
    ap.add_argument("--items", nargs="+", type=Path, required=True)
    ap.add_argument("--split", default="fit")
    ap.add_argument("--gate", default="adapted", help="the gate file (default: adapted)")
    args = ap.parse_args()
    gate, labels = Gate.load(Path(args.gate)), stored_labels()
    runs, course = quoted_runs(args.items)
    for path in args.samples:
        samples = {x.qid: x for x in read_samples(path)[0]}
        for set_name in SETS:
            got = figures(set_name, args.split, samples, gate, runs, course, labels)
            if any(v for k, v in got.items() if k != "unknown") or got["unknown"]:
                print(json.dumps({"samples": path.name, "set": set_name, **got}))


if __name__ == "__main__":
    main()
