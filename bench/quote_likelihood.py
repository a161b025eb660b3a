"""Query likelihood as the quote's confidence, replayed on a fitting run.

The quote strategy's yes/no (the LLM's P(SIM) that a quote answers) barely tells a passage that
answers from its neighbours. This reads another signal over the same passages: how much more
likely the embedded model finds the student's question after the passage than after no passage
(the mean log-probability of the question's tokens, as ``AULA_RERANK=likelihood`` reads it,
minus the same without a passage: a pointwise mutual information), through llama.cpp in this
process (``app.lm_scorer``, the embedded GGUF as it is).

``python -m bench.quote_likelihood ITEMS.jsonl [--json]`` reads a ``quote-read4`` run
(``BENCH_ANSWER_SPLIT=fit BENCH_ANSWER_STRATEGIES=quote-read4 python -m bench.answer_quality``),
scores each question after each quote it recorded (stored as it goes in
``bench/out/quote_likelihood.jsonl``, so a rerun scores only what is missing) and prints what
students get under each policy (``POLICIES``) at each threshold, with the gate's cut and the
shipped number of passages quoted as ``bench.fit_quote --grid`` replays them, the quotes as the
passages were read (not continued to ``AULA_QUOTE_CHARS``: these figures were read before the
continuation), labelled by the stored labels of the same texts (unlabelled ones counted apart).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

from bench.answer_quality import stored_labels
from bench.common import OUT, read_jsonl
from bench.fit_quote import figures, gate_cut, replayed

CACHE = OUT / "quote_likelihood.jsonl"
THRESHOLDS = tuple(x / 100 for x in range(40, 101, 5))


def scores(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each item's mean log-probability of its question without a passage (``base``) and after
    each recorded quote (``after``), by item key; read from ``CACHE``, the missing ones
    computed and appended."""
    from answer.quote import NO_PASSAGE, question_logprob
    from app.config import Settings
    from app.lm_scorer import scorer_for
    from corpus.language import Lang, detect_language

    done = {r["key"]: r for r in read_jsonl(CACHE)} if CACHE.exists() else {}
    todo = [i for i in items if i.get("readings") and i["key"] not in done]
    if todo:
        scorer = scorer_for("embedded", Settings(llm_base_url=None).service.cache_dir,
                            threads=os.cpu_count() or 0)
        assert scorer is not None
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        with open(CACHE, "a") as f:
            for n, item in enumerate(todo, 1):
                lang: Lang = "en" if detect_language(item["question"]) == "en" else "pt"
                q = item["question"]
                row = {"key": item["key"],
                       "base": question_logprob(scorer.logprobs, q, NO_PASSAGE[lang], lang),
                       "after": [question_logprob(scorer.logprobs, q, r["text"], lang)
                                 for r in item["readings"]]}
                f.write(json.dumps(row) + "\n")
                f.flush()
                done[row["key"]] = row
                print(f"\rverossimilhança {n}/{len(todo)}", end="", file=sys.stderr)
        print(file=sys.stderr)
    return done


def gains(item: dict[str, Any], scored: dict[str, dict[str, Any]]) -> list[float] | None:
    s = scored.get(item["key"])
    return None if s is None else [a - s["base"] for a in s["after"]]


def replay(items: list[dict[str, Any]], scored: dict[str, dict[str, Any]], policy: str,
           t: float, cut: float) -> list[dict[str, Any]]:
    """The answers ``policy`` gives at threshold ``t`` (``POLICIES``), with the gate's cut and the
    shipped number of passages quoted."""
    from answer.quote import QUOTE

    out = []
    for item in items:
        g = gains(item, scored)
        if policy in ("gain", "off", "pmi") and g is not None:
            item = copy.deepcopy(item)
            for n, reading in enumerate(item["readings"]):
                reading["p"] = (g[n] if policy == "pmi" else
                                1.0 if policy == "off" or g[0] >= t else 0.0)
            out.append(replayed(item, QUOTE.checks, QUOTE.shown,
                                t if policy == "pmi" else 0.5, cut))
            continue
        got = replayed(item, QUOTE.checks, QUOTE.shown, QUOTE.min_p, cut)
        if policy == "first" and g and got["answered"] and g[0] < t:
            got = {**got, "answered": False}
        out.append(got)
    return out


POLICIES = {
    "yesno": "the LLM's yes/no on each of the first two quotes, P >= AULA_QUOTE_MIN_P (shipped "
             "before)",
    "off": "no confidence read: the first two passages the gate passed quoted",
    "gain": "the first two passages quoted when the question's gain after the first reaches "
            "the threshold (AULA_QUOTE_CONFIDENCE=likelihood)",
    "first": "the yes/no as shipped, then declined when the gain after the first passage is "
             "under the threshold",
    "pmi": "each quote's own gain in place of the yes/no's P",
}


def separation(items: list[dict[str, Any]], scored: dict[str, dict[str, Any]]
               ) -> dict[str, float]:
    """How well each signal tells a recorded passage in the gold span from the other passages
    read for answerable questions (AUC over all of them): the yes/no's P, the likelihood after
    the passage, and its gain over no passage."""
    pos: dict[str, list[float]] = {"yes/no P": [], "likelihood": [], "gain": []}
    neg: dict[str, list[float]] = {k: [] for k in pos}
    for item in items:
        s = scored.get(item["key"])
        if s is None or not item["answerable"]:
            continue
        for r, after in zip(item["readings"], s["after"], strict=False):
            gold = (r["lecture_id"] == item["gold_lecture"] and r["start"] < item["gold_end"]
                    and r["end"] > item["gold_start"])
            for name, v in (("yes/no P", r["p"]), ("likelihood", after),
                            ("gain", after - s["base"])):
                (pos if gold else neg)[name].append(v)
    return {k: _auc(pos[k], neg[k]) for k in pos if pos[k] and neg[k]}


def _auc(pos: list[float], neg: list[float]) -> float:
    wins = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg)
    return wins / (len(pos) * len(neg))


def main() -> None:
    paths = [Path(a) for a in sys.argv[1:] if not a.startswith("--")]
    items = [r for p in paths for r in read_jsonl(p)
             if r.get("id") != "warm-up" and r["strategy"].startswith("quote-read4")]
    scored = scores(items)
    labels = stored_labels()
    cut = gate_cut([i for i in items if i.get("readings")])
    sets = ("all", *sorted({i["set"] for i in items}))
    rows = []
    for policy in POLICIES:
        for t in (None,) if policy in ("yesno", "off") else THRESHOLDS:
            got = replay(items, scored, policy, t or 0.0, cut)
            rows.extend({"policy": policy, "threshold": t, "set": name,
                         **figures([r for r in got if name in ("all", r["set"])], labels)}
                        for name in sets)
    if "--json" in sys.argv:
        print(json.dumps({"min_covered": cut, "table": rows}, indent=1))
        return
    print(f"gate cut {cut}; {len(scored)} items scored")
    for name, auc in separation(items, scored).items():
        print(f"  passages in the gold span against the others read, AUC: {name} {auc:.3f}")
    for name, what in POLICIES.items():
        print(f"  {name}: {what}")
    print(f"{'policy':>8} {'gain >=':>7} {'set':>8} {'C':>3} {'PC':>3} {'I':>3} {'declined':>8} "
          f"{'uncov':>5} {'unlab':>5} {'cost':>5}")
    for r in rows:
        t = "" if r["threshold"] is None else f"{r['threshold']:.2f}"
        print(f"{r['policy']:>8} {t:>7} {r['set']:>8} {r['C']:>3} {r['PC']:>3} {r['I']:>3} "
              f"{r['declined_covered']:>8} {r['answered_uncovered']:>5} {r['unlabelled']:>5} "
              f"{r['cost']:>5.0f}")


if __name__ == "__main__":
    main()
