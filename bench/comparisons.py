"""Questions that compare two subjects: does the answer get to read the lecture of each?

Questions: ``bench/data/comparisons.jsonl``, 20 written for it ("qual a diferença entre
produto escalar e produto vetorial?", "derivada vs limite, qual a relação?", two in English),
each with the lectures of 3b1b-pt that teach each side (checked by title and transcript): 17
whose sides are taught in different lectures and 3 whose two sides one lecture teaches. Each is
searched as ``/ask`` searches it (``services.search_query``) over the answer bench's 3b1b-pt
index (``bench/out/index-answers``, built if missing), two ways in the same run:

- ``whole``: the question searched whole (what ``/ask`` did before it searched compared
  subjects apart);
- ``sides``: ``Services.search``, which also searches each compared subject
  (``corpus.compare``) and brings each one's best window up beside the first.

For each, the passages the evidence check reads (``Pipeline.candidates_for``: the first three
distinct passages of the first six windows) are looked at: the share of questions where the
first two (the most the answer reads) and where the three hold a passage of each side's
lecture, and where the first passage is unchanged. No LLM.
Writes bench/out/comparisons.json and, per question, comparisons_items.jsonl.
"""

from __future__ import annotations

import json
import time

from bench.common import CORPUS_3B1B, DATA, OUT, median, read_jsonl, ready, report

QUESTIONS = DATA / "comparisons.jsonl"


def main() -> None:
    if not ready(CORPUS_3B1B):
        return
    from bench.answer_quality import offline_answerer
    from corpus.compare import compared_subjects

    services, answerer = offline_answerer()
    rows = read_jsonl(QUESTIONS)
    both = {"whole": 0, "sides": 0, "whole_two": 0, "sides_two": 0}
    first_same = 0
    read_as = 0
    secs: dict[str, list[float]] = {"whole": [], "sides": []}
    with services.stack, open(OUT / "comparisons_items.jsonl", "w") as log:
        for row in rows:
            query = services.search_query(row["question"])
            sides = compared_subjects(query)
            read_as += sides is not None
            item: dict = {"id": row["id"], "searched": query, "sides": sides}
            firsts = {}
            for way in ("whole", "sides"):
                t0 = time.perf_counter()
                hits = (services.retriever.search(query, 10) if way == "whole"
                        else services.find(row["question"], 10).hits)
                secs[way].append(time.perf_counter() - t0)
                passages = answerer.candidates_for(answerer.subject(query), hits)
                lectures = [p.hit.lecture_id for p in passages]
                got, two = (any(lec in row["a"] for lec in read)
                            and any(lec in row["b"] for lec in read)
                            for read in (lectures, lectures[:2]))
                both[way] += got
                both[f"{way}_two"] += two
                firsts[way] = (passages[0].hit.lecture_id, passages[0].start) if passages else None
                item[way] = {"lectures": lectures, "both_sides": got, "in_first_two": two}
            first_same += firsts["whole"] == firsts["sides"]
            log.write(json.dumps(item, ensure_ascii=False) + "\n")
    n = max(1, len(rows))
    report("comparisons", {
        "questions": len(rows),
        "read_as_comparisons": read_as,
        "whole_both_sides_in_first_two": round(both["whole_two"] / n, 3),
        "sides_both_sides_in_first_two": round(both["sides_two"] / n, 3),
        "whole_both_sides_in_three_checked": round(both["whole"] / n, 3),
        "sides_both_sides_in_three_checked": round(both["sides"] / n, 3),
        "first_passage_unchanged": round(first_same / n, 3),
        "search_p50_ms_whole": round(1000 * median(secs["whole"]), 1),
        "search_p50_ms_sides": round(1000 * median(secs["sides"]), 1),
    })


if __name__ == "__main__":
    main()
