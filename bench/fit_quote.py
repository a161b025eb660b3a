"""The quote strategy's threshold (``AULA_QUOTE_MIN_P``), chosen on a fitting run.

Reads the answer bench's items of a ``quote`` run made with ``AULA_QUOTE_MIN_P=0`` on the
fitting half (every quote shown, its P recorded), with the blind labels of its answers
(``bench/data/answer_labels.jsonl``), and prints, for each candidate threshold, what students
would get: wrong answers (I) and answered uncovered questions, the costly errors, against
covered questions declined. The chosen threshold is the lowest at which no uncovered question of
the fitting runs is answered (the rule of ``aula fit-gate --strict``); the one minimising
``WRONG_COST`` × (wrong + answered uncovered) + declined covered is printed beside it (on the
embedded model's yes/no it declines most covered questions, and its P did not transfer from a
fitting half to a test half).

``python -m bench.fit_quote ITEMS.jsonl [...] [--json]``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.answer_quality import stored_labels
from bench.common import read_jsonl

WRONG_COST = 3.0


def table(rows: list[dict[str, Any]], labels: dict[str, str]) -> list[dict[str, Any]]:
    """Per threshold: answered, wrong, answered uncovered, declined covered, cost."""
    quoted = [r for r in rows if r["strategy"] == "quote" and r.get("quote_p") is not None]
    cuts = sorted({0.0, *(round(r["quote_p"], 4) for r in quoted)})
    ans = [r for r in rows if r["strategy"] == "quote" and r["answerable"]]
    out = []
    for t in cuts:
        shown = [r for r in quoted if r["answered"] and r["quote_p"] >= t]
        wrong = sum(labels.get(r["key"]) == "I" for r in shown if r["answerable"])
        right = sum(labels.get(r["key"]) == "C" for r in shown if r["answerable"])
        uncovered = sum(not r["answerable"] for r in shown)
        declined = len(ans) - sum(r["answerable"] for r in shown)
        out.append({"threshold": t, "answered": len(shown), "C": right, "I": wrong,
                    "answered_uncovered": uncovered, "declined_covered": declined,
                    "unlabelled": sum(r["key"] not in labels for r in shown if r["answerable"]),
                    "cost": WRONG_COST * (wrong + uncovered) + declined})
    return out


def main() -> None:
    paths = [Path(a) for a in sys.argv[1:] if not a.startswith("--")]
    rows = [r for p in paths for r in read_jsonl(p) if r.get("id") != "warm-up"]
    got = table(rows, stored_labels())
    cheapest = min(got, key=lambda r: (r["cost"], r["threshold"]))
    best = next((r for r in got if r["answered_uncovered"] == 0), got[-1])
    if "--json" in sys.argv:
        print(json.dumps({"chosen": best["threshold"], "least_cost": cheapest["threshold"],
                          "table": got}, indent=1))
        return
    print(f"{'P >=':>6} {'answered':>8} {'C':>3} {'I':>3} {'uncov':>5} {'declined':>8} "
          f"{'unlab':>5} {'cost':>5}")
    for r in got:
        print(f"{r['threshold']:>6.3f} {r['answered']:>8} {r['C']:>3} {r['I']:>3} "
              f"{r['answered_uncovered']:>5} {r['declined_covered']:>8} {r['unlabelled']:>5} "
              f"{r['cost']:>5.0f}")
    print(f"least cost: {cheapest['threshold']}")
    print(f"chosen (no uncovered question answered): AULA_QUOTE_MIN_P={best['threshold']}")


if __name__ == "__main__":
    main()
