"""Requests to sum up a lecture: covered or declined, and which lecture is summed up.

Questions: ``bench/data/summary_requests.jsonl``, 45 requests written for it in five
phrasings ("resume a aula de X", "me faz um resumo do vídeo sobre X", "quais os pontos
principais da aula de X?", ...): 25 whose subject a lecture of 3b1b-pt teaches (with that
lecture, or the two that teach it) and 20 whose subject no lecture teaches (checked with grep).
Each request is searched as ``/ask`` searches it (its subject: ``answer.summary.summary_topic``)
over the answer bench's 3b1b-pt index (``bench/out/index-answers``, built if missing), and
decided two ways in the same run:

- ``gate``: the shipped evidence gate on the subject read as a question (what a request met
  before requests to sum up were recognised, apart from its being searched whole);
- ``summary``: the lecture most of the first three hits are from, covered when it says each
  word of the subject in its title or in 3 of its windows or more
  (``answer.summary.summary_decision``, what ``/ask`` now does).

Figures: share covered of the taught subjects, share declined of the others, and the share of
taught subjects whose own lecture is the one summed up. No LLM. Writes
bench/out/summary_requests.json and, per request, summary_requests_items.jsonl.
"""

from __future__ import annotations

import json

from bench.common import CORPUS_3B1B, DATA, OUT, read_jsonl, ready, report

REQUESTS = DATA / "summary_requests.jsonl"


def main() -> None:
    if not ready(CORPUS_3B1B):
        return
    from answer.summary import asks_summary
    from bench.answer_quality import offline_answerer

    services, answerer = offline_answerer()
    rows = read_jsonl(REQUESTS)
    counts = {"taught": 0, "untaught": 0, "read_as_request": 0, "gate_taught": 0,
              "gate_untaught": 0, "summary_taught": 0, "summary_untaught": 0, "own_lecture": 0}
    with services.stack, open(OUT / "summary_requests_items.jsonl", "w") as log:
        for row in rows:
            kind = "taught" if row["taught"] else "untaught"
            counts[kind] += 1
            counts["read_as_request"] += asks_summary(row["request"])
            query = services.search_query(row["request"])
            hits = services.retriever.search(query, 10)
            _, probs, feats = answerer.gate_signals(query, hits)
            gate = answerer.gate.decide(probs, [h.score for h in hits], 2, feats)
            summary, windows = answerer.summary_decision(query, hits, gate)
            lecture = windows[0].lecture_id if windows else ""
            counts[f"gate_{kind}"] += gate.covered
            counts[f"summary_{kind}"] += summary.covered
            own = row["taught"] and lecture in row["lectures"]
            counts["own_lecture"] += own
            log.write(json.dumps({"id": row["id"], "searched": query, "lecture": lecture,
                                  "gate": gate.covered, "summary": summary.covered,
                                  "reason": summary.reason}, ensure_ascii=False) + "\n")
    taught, untaught = max(1, counts["taught"]), max(1, counts["untaught"])
    report("summary_requests", {
        "requests": len(rows),
        "read_as_summary_requests": counts["read_as_request"],
        "taught_subjects": counts["taught"],
        "untaught_subjects": counts["untaught"],
        "gate_taught_covered": round(counts["gate_taught"] / taught, 3),
        "gate_untaught_declined": round(1 - counts["gate_untaught"] / untaught, 3),
        "summary_taught_covered": round(counts["summary_taught"] / taught, 3),
        "summary_untaught_declined": round(1 - counts["summary_untaught"] / untaught, 3),
        "taught_own_lecture_summed_up": round(counts["own_lecture"] / taught, 3),
    })


if __name__ == "__main__":
    main()
