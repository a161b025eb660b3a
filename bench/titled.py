"""Short questions that name a lecture's subject: does that lecture come first?

Questions over 3b1b-pt's index (``bench/out/index-answers``, built if missing), each searched
two ways in the same run: ``fused``, the retriever's order as it is (``Retriever.search``), and
``titled``, as ``/ask`` searches it (``Services.find``), where a question whose words all name
one lecture's title gets that lecture's best hit first (``corpus.titles``). Figures: the share
whose first hit is in the gold lecture, and how many questions the rule moved.

- ``fit``: ``bench/data/short_titled_3b1b.jsonl``, 40 short questions written for the rule
  ("o que é a lei de snell?"), 25 about a subject a title names and 15 about one inside a
  lecture whose title does not name it (where the rule must stay out);
- ``test``: the 55 answerable questions of ``bench/data/gate_short_3b1b.jsonl``, short
  questions as students type them, written for the gate and never fitted on;
- ``bench_fit``: the fitting halves of the answer bench, the development set and the gate bench
  (their answerable questions with a gold lecture): longer questions, where the rule should
  seldom fire.
No LLM. Writes bench/out/titled_items.jsonl.
"""

from __future__ import annotations

import json

from bench.common import CORPUS_3B1B, DATA, OUT, read_jsonl, ready, report

SETS = {
    "fit": [("short_titled_3b1b.jsonl", None)],
    "test": [("gate_short_3b1b.jsonl", None)],
    "bench_fit": [("answers_3b1b.jsonl", "fit"), ("questions_3b1b_dev.jsonl", None),
                  ("gate_3b1b.jsonl", "fit")],
}


def _rows(files: list[tuple[str, str | None]]) -> list[dict]:  # type: ignore[type-arg]
    return [r for name, split in files for r in read_jsonl(DATA / name)
            if r.get("answerable", True) and r.get("gold_lecture")
            and (split is None or r.get("split") == split)]


def main() -> None:
    if not ready(CORPUS_3B1B):
        return
    from bench.answer_quality import offline_answerer

    services, _answerer = offline_answerer()
    figures: dict[str, object] = {}
    with services.stack, open(OUT / "titled_items.jsonl", "w") as log:
        for name, files in SETS.items():
            rows = _rows(files)
            first = {"fused": 0, "titled": 0}
            moved = 0
            for row in rows:
                fused = services.retriever.search(services.search_query(row["question"]), 10)
                titled = services.find(row["question"], 10).hits
                for way, hits in (("fused", fused), ("titled", titled)):
                    first[way] += bool(hits) and hits[0].lecture_id == row["gold_lecture"]
                changed = bool(fused) and bool(titled) and fused[0].corpus_id != titled[0].corpus_id
                moved += changed
                log.write(json.dumps({"set": name, "id": row["id"], "moved": changed,
                                      "gold": row["gold_lecture"],
                                      "fused": fused[0].lecture_id if fused else None,
                                      "titled": titled[0].lecture_id if titled else None},
                                     ensure_ascii=False) + "\n")
            n = max(1, len(rows))
            figures[f"{name}_questions"] = len(rows)
            figures[f"{name}_lecture_first_fused"] = round(first["fused"] / n, 3)
            figures[f"{name}_lecture_first_titled"] = round(first["titled"] / n, 3)
            figures[f"{name}_moved"] = moved
    report("titled", figures)


if __name__ == "__main__":
    main()
