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

``--grid`` reads instead a ``quote-read4`` run (``BENCH_ANSWER_STRATEGIES=quote-read4``, or
``quote-read4-sentences`` where the yes/no reads each quote's best sentences: every
question the gate passes gets the first passages' quotes read, each recorded with its P) and
replays the answer the ``quote`` strategy gives, labelled by the stored label of the same text.
The gate's cut (``AULA_QUOTE_MIN_COVERED``) is the lowest P(covered) at which no uncovered
question of the fitting halves is answered; above it, for each number of passages read, of
passages quoted (1 or 2) and quote threshold, it prints what students get per set and for both,
and chooses the setting of least ``WRONG_COST`` × (wrong + answered uncovered) + declined
covered on both sets together. Each quote is continued as the service continues it
(``AULA_QUOTE_CHARS``, with the lectures' cues of the sets' indexes under ``bench/out``;
``--chars N`` replays another length, 0 the passages as read). ``--rows FILE`` writes the
replayed answers for ``python -m bench.label_answers sheet FILE`` (the unlabelled ones count in
``unlab``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.answer_quality import stored_labels, text_key
from bench.common import read_jsonl

WRONG_COST = 3.0
THRESHOLDS = (0.0, *(x / 100 for x in range(60, 98)))
"""The quote thresholds ``--grid`` replays."""


def table(rows: list[dict[str, Any]], labels: dict[str, str]) -> list[dict[str, Any]]:
    """Per threshold: answered, wrong, answered uncovered, declined covered, cost."""
    quoted = [r for r in rows if r["strategy"] == "quote" and r.get("quote_p") is not None]
    cuts = sorted({0.0, *(round(r["quote_p"], 4) for r in quoted)})
    ans = [r for r in rows if r["strategy"] == "quote" and r["answerable"]]
    out = []
    for t in cuts:
        shown = [r for r in quoted if r["answered"] and r["quote_p"] >= t]
        wrong = sum(labels.get(text_key(r["key"])) == "I" for r in shown if r["answerable"])
        right = sum(labels.get(text_key(r["key"])) == "C" for r in shown if r["answerable"])
        uncovered = sum(not r["answerable"] for r in shown)
        declined = len(ans) - sum(r["answerable"] for r in shown)
        out.append({"threshold": t, "answered": len(shown), "C": right, "I": wrong,
                    "answered_uncovered": uncovered, "declined_covered": declined,
                    "unlabelled": sum(text_key(r["key"]) not in labels
                                      for r in shown if r["answerable"]),
                    "cost": WRONG_COST * (wrong + uncovered) + declined})
    return out


def p_covered(row: dict[str, Any]) -> float | None:
    """The gate's fitted P(covered) as the item's reason gives it (two decimals), if any."""
    m = re.search(r"P\(covered\)=([0-9.]+)", row.get("reason", ""))
    return float(m.group(1)) if m else None


Cues = Mapping[str, Callable[[Any], Sequence[Any]]]
"""Each set's ``cues_for`` (``lecture_cues``): the timed cues inside a hit's span."""


def lecture_cues(sets: Sequence[str]) -> Cues:
    """Each set's ``Retriever.cues_for`` over its index under ``bench/out`` (built by the answer
    bench), the look-up the service continues quotes with; a set without an index has none."""
    from bench.answer_quality import SETS
    from bench.common import OUT
    from corpus.index import IndexStore
    from corpus.retrieve import Retriever

    out: dict[str, Callable[[Any], Sequence[Any]]] = {}
    for name in sets:
        store = IndexStore(OUT / SETS[name][3])
        if store.exists():
            out[name] = Retriever(store.load(with_faiss=False), None).cues_for
    return out


def replayed(row: dict[str, Any], checks: int, shown: int, threshold: float,
             min_covered: float = 0.0, cues: Cues | None = None,
             chars: int = 0) -> dict[str, Any]:
    """The ``quote`` strategy's answer to a ``quote-read4`` item with ``checks`` passages read,
    up to ``shown`` quoted, at ``threshold``, the gate's P(covered) at least ``min_covered``,
    each quote continued to ``chars`` with its lecture's next cues (``cues``' look-up, as the
    service continues it): the item's fields, its answer, key and P."""
    from answer.quote import NOT_FOUND, Quote, continued_all, quotes_answer, shown_quotes
    from bench.answer_quality import answer_key

    read = row.get("readings", [])[:max(checks, shown)]
    if (p_covered(row) or 0.0) < min_covered:
        read = []
    ps = [r["p"] if n < checks else None for n, r in enumerate(read)]  # past ``checks``: unread
    chosen = [read[i] for i in shown_quotes(ps, threshold, shown)]
    if chosen:
        lang = "en" if row["answer"].startswith("In the lecture") else "pt"
        cues_for = (cues or {}).get(row["set"], lambda _hit: ())
        quotes = continued_all([Quote(0, r["start"], r["end"], r["text"], 0.0) for r in chosen],
                               [r["lecture_id"] for r in chosen], cues_for, chars)
        text = quotes_answer(None, 1, [(q, r["title"]) for q, r in zip(quotes, chosen,
                                                                        strict=True)], lang)
    else:
        text = NOT_FOUND["pt"]
    return {**row, "strategy": "quote", "answer": text, "answered": bool(chosen),
            "covered": bool(chosen),
            "quote_p": max((p for p in ps if p is not None), default=0.0),
            "key": answer_key(row["set"], row["id"], "quote", text)}


def gate_cut(items: list[dict[str, Any]]) -> float:
    """The lowest P(covered) (two decimals) above every uncovered question the gate passed."""
    passed = [p_covered(i) or 0.0 for i in items if not i["answerable"]]
    return round(max(passed) + 0.01, 2) if passed else 0.0


def figures(got: list[dict[str, Any]], labels: dict[str, str]) -> dict[str, Any]:
    """C / PC / I, unlabelled, covered declined, uncovered answered and the cost of replayed
    answers."""
    ans = [r for r in got if r["answerable"]]
    marks = [labels.get(text_key(r["key"])) for r in ans if r["answered"]]
    out = {"answerable": len(ans), "C": marks.count("C"), "PC": marks.count("PC"),
           "I": marks.count("I"), "unlabelled": marks.count(None),
           "declined_covered": sum(not r["answered"] for r in ans),
           "answered_uncovered": sum(r["answered"] for r in got if not r["answerable"])}
    out["cost"] = WRONG_COST * (out["I"] + out["answered_uncovered"]) + out["declined_covered"]
    return out


def grid(rows: list[dict[str, Any]], labels: dict[str, str], cues: Cues | None = None,
         chars: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per (passages read, quoted), the gate cut at which no uncovered question is answered and
    each quote threshold, per set and for both: the figures; and the answers replayed (their
    quotes continued to ``chars``)."""
    items = [r for r in rows if r["strategy"].startswith("quote-read4")]
    cut = gate_cut([r for r in items if r.get("readings")])
    out, every = [], []
    for checks in range(1, 1 + max(len(i.get("readings", [])) for i in items)):
        for shown in (1, 2):
            for t in THRESHOLDS:
                got = [replayed(i, checks, shown, t, cut, cues, chars) for i in items]
                every.extend(got)
                for name in ("all", *sorted({i["set"] for i in items})):
                    out.append({"checks": checks, "shown": shown, "min_covered": cut,
                                "threshold": t, "set": name,
                                **figures([r for r in got if name in ("all", r["set"])],
                                          labels)})
    return out, every


def main_grid(paths: list[Path]) -> None:
    from answer.quote import QUOTE

    rows = [r for p in paths for r in read_jsonl(p) if r.get("id") != "warm-up"]
    chars = (int(sys.argv[sys.argv.index("--chars") + 1]) if "--chars" in sys.argv
             else QUOTE.chars)
    cues = lecture_cues(sorted({r["set"] for r in rows})) if chars else None
    got, every = grid(rows, stored_labels(), cues, chars)
    if "--rows" in sys.argv:
        dest = Path(sys.argv[sys.argv.index("--rows") + 1])
        seen: set[str] = set()
        with open(dest, "w") as f:
            for r in every:
                if r["key"] not in seen:
                    seen.add(r["key"])
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
    # chosen among the settings whose answers are all labelled
    both = [r for r in got if r["set"] == "all" and not r["unlabelled"]] or [
        r for r in got if r["set"] == "all"]
    best = min(both, key=lambda r: (r["cost"], r["checks"], r["shown"], r["threshold"]))
    chosen = {"min_covered": best["min_covered"], "checks": best["checks"],
              "shown": best["shown"], "threshold": best["threshold"]}
    if "--json" in sys.argv:
        print(json.dumps({"chosen": chosen, "table": got}, indent=1))
        return
    print(f"gate: AULA_QUOTE_MIN_COVERED={best['min_covered']} (lowest P(covered) with no "
          "uncovered fitting question answered)")
    print(f"{'read':>4} {'quoted':>6} {'P >=':>6} {'set':>8} {'C':>3} {'PC':>3} {'I':>3} "
          f"{'declined':>8} {'uncov':>5} {'unlab':>5} {'cost':>5}")
    for r in got:
        if (r["checks"] == best["checks"] and r["shown"] == best["shown"]
                and (round(r["threshold"] * 100) % 5 == 0
                     or r["threshold"] == best["threshold"])):
            print(f"{r['checks']:>4} {r['shown']:>6} {r['threshold']:>6.3f} {r['set']:>8} "
                  f"{r['C']:>3} {r['PC']:>3} {r['I']:>3} {r['declined_covered']:>8} "
                  f"{r['answered_uncovered']:>5} {r['unlabelled']:>5} {r['cost']:>5.0f}")
    print(f"least cost (both sets): AULA_QUOTE_CHECKS={best['checks']} "
          f"AULA_QUOTE_PASSAGES={best['shown']} AULA_QUOTE_MIN_P={best['threshold']}")


def main() -> None:
    paths = [Path(a) for a in sys.argv[1:] if not a.startswith("--")
             and sys.argv[sys.argv.index(a) - 1] not in ("--rows", "--chars")]
    if "--grid" in sys.argv:
        main_grid(paths)
        return
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
