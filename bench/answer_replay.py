"""The answer path's deterministic parts replayed, to show a refactor moved nothing.

For every question of the live-class answer set and every strategy: what is searched, the hits,
the decision and its reason, the moments, the prompt the generator gets (hashed), the passages
it reads (hashed) and the reply built around one fixed generated sentence, with a fake LLM whose
yes/no reading is a fixed function of its prompt. No real LLM: a replay takes minutes, and two
replays of the same code are identical.

    python -m bench.answer_replay OUT.jsonl            # replay this checkout
    python -m bench.answer_replay --compare A.jsonl B.jsonl   # what differs, by field
"""

from __future__ import annotations

import hashlib
import json
import sys
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.answer_quality import SETS, services_over_index
from bench.common import read_jsonl

STRATEGIES = ("gated", "quote", "direct")


class ReplayLLM:
    """An LLM at the HTTP edge's place: one fixed answer, a yes/no P read from the prompt."""

    model_id = "replay"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def stream(self, messages: Any, temperature: float = 0.0, max_tokens: int | None = None
               ) -> Iterator[str]:
        self.prompts.append(json.dumps(messages, ensure_ascii=False))
        yield "A resposta do teste está no trecho [1]."

    def chat(self, messages: Any, temperature: float = 0.0, max_tokens: int | None = None
             ) -> str:
        return "".join(self.stream(messages))

    def first_token(self, messages: Any, top: int = 10, fresh: bool = False
                    ) -> tuple[str, dict[str, float]]:
        p = zlib.crc32(json.dumps(messages, ensure_ascii=False).encode()) % 100 / 100
        return "Sim", {"Sim": p, "Não": 1 - p}


def _digest(text: str, n: int = 12) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def replay(set_name: str = "fastapi") -> list[dict[str, Any]]:
    from answer.pipeline import Pipeline

    services = services_over_index(set_name, with_llm=False)
    emb = services.embedder
    rows = []
    questions = read_jsonl(SETS[set_name][0])
    with services.stack:
        for strategy in STRATEGIES:
            llm = ReplayLLM()
            settings = services.settings.model_copy(update={"answer_strategy": strategy})
            pipe = Pipeline.from_settings(settings, llm, services,
                                          lambda t, k: emb.embed(t, k), emb.model_id)
            for q in questions:
                llm.prompts.clear()
                found = services.find(q["question"], 10)
                reply = pipe.run(found.question, pipe.reads(found))
                rows.append({
                    "strategy": strategy, "id": q["id"], "query": found.query,
                    "hits": [(h.lecture_id, round(h.start, 1)) for h in found.hits],
                    "covered": reply.covered, "reason": reply.reason,
                    "moments": [(m.lecture_id, round(m.start, 1), m.p) for m in reply.moments],
                    "prompts": _digest("".join(llm.prompts)),
                    "answer": reply.answer.text if reply.answer else None,
                    "confidence": reply.confidence,
                    "contexts": [_digest(c, 8) for c in reply.contexts]})
    return rows


def compare(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> Counter[tuple[str, str]]:
    """How many questions differ, by strategy and field (missing rows count as ``row``)."""
    key = lambda r: (r["strategy"], r["id"])  # noqa: E731
    left, right = {key(r): r for r in a}, {key(r): r for r in b}
    out: Counter[tuple[str, str]] = Counter()
    for k in left.keys() | right.keys():
        if k not in left or k not in right:
            out[(k[0], "row")] += 1
            continue
        for field in left[k]:
            if left[k][field] != right[k].get(field):
                out[(k[0], field)] += 1
    return out


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--compare"] and len(args) == 3:
        a, b = (read_jsonl(Path(p)) for p in args[1:])
        diff = compare(a, b)
        print(json.dumps({"rows": [len(a), len(b)],
                          "differ": {f"{s}.{f}": n for (s, f), n in sorted(diff.items())}}))
        return
    if len(args) != 1:
        raise SystemExit(__doc__)
    rows = replay()
    Path(args[0]).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(json.dumps({"rows": len(rows), "covered": dict(Counter(
        f"{r['strategy']}.{r['covered']}" for r in rows))}))


if __name__ == "__main__":
    main()
