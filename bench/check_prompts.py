"""The answer post-check's prompt, measured against a faster one, on the embedded LLM.

``separate`` (what the answerer does) puts each sentence to the claim checker's own prompt over
one passage (``eval.claims.claim_messages``), which the server has to read; ``shared`` (measured,
not taken) appends the question to the generator's prompt, which the server's prompt cache has
read already (``shared_check_messages``), so only the sentence and the question are new.

Items: the labelled answers of ``bench/data/judge_3b1b.jsonl`` (split ``BENCH_CHECK_SPLIT``,
default ``fit``; labels C and I, alternating, the first ``BENCH_CHECK_N``, default 40), each over
the two passages the answerer would read for its question. Per answer: the mean over its
sentences of P(confirmed) (``separate``: the best of the passages, as for an uncited sentence).
Figures: how well that mean tells correct answers from incorrect ones (AUC, C against I), and
the seconds one check call takes (p50 over the answers of the mean per call; the generator's
prompt read first, as after generation, then every sentence checked one way, then the
other), and the share of sentences of correct answers each confirms at
``eval.claims.SUPPORT_AT``. Not in ``make bench`` by default (``BENCH_ONLY=check_prompts``).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from bench.common import CORPUS_3B1B, DATA, OUT, env_int, median, read_jsonl, ready, report

ITEMS = DATA / "judge_3b1b.jsonl"
SHARED_CHECK = ("\n\nVerificação: a AFIRMAÇÃO abaixo é confirmada pelos trechos acima?\n"
                "AFIRMAÇÃO: {claim}\nResponda apenas SIM ou NÃO.")


def shared_check_messages(messages: list[dict[str, str]], claim: str) -> list[dict[str, str]]:
    """The generator's prompt with the check of ``claim`` appended to its last message."""
    *head, last = messages
    return [*head, {"role": last["role"],
                    "content": last["content"] + SHARED_CHECK.format(claim=claim)}]


def auc(pos: list[float], neg: list[float]) -> float:
    """P(a random positive scores above a random negative), ties half."""
    pairs = [(a > b) + 0.5 * (a == b) for a in pos for b in neg]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def _items(split: str, n: int) -> list[dict[str, Any]]:
    rows = [r for r in read_jsonl(ITEMS) if r.get("split") == split]
    good = [r for r in rows if r["label"] == "C"]
    bad = [r for r in rows if r["label"] == "I"]
    return [r for pair in zip(good, bad, strict=False) for r in pair][:n]


def main() -> None:
    if not ready(CORPUS_3B1B):
        return
    from tqdm import tqdm

    from answer.citations import MARKER_RE, sentence_spans
    from answer.evidence import passage_block
    from answer.pipeline import gated_messages
    from bench.answer_quality import services_over_index
    from corpus.context import squash
    from eval.claims import SUPPORT_AT, claim_messages, yes_probability

    split = os.environ.get("BENCH_CHECK_SPLIT", "fit")
    items = _items(split, env_int("BENCH_CHECK_N", 40))
    services = services_over_index()
    means: dict[str, dict[str, list[float]]] = {"separate": {"C": [], "I": []},
                                                "shared": {"C": [], "I": []}}
    seconds: dict[str, list[float]] = {"separate": [], "shared": []}
    confirmed: dict[str, list[bool]] = {"separate": [], "shared": []}
    OUT.mkdir(parents=True, exist_ok=True)
    with services.stack, open(OUT / "check_prompts_items.jsonl", "w") as log:
        llm = services.llm

        def p_yes(messages: list[dict[str, str]]) -> float:
            reply, probs = llm.first_token(messages)
            return yes_probability(reply, probs) or 0.0

        for item in tqdm(items, desc="verificações", unit="resposta"):
            found = services.find(item["question"], 10)
            hits, query = found.hits, found.query
            passages = services.pipeline.candidates_for(query, hits)[:2]
            gen = gated_messages(item["question"], passages, "pt")
            text = item["answer"]
            claims = [c for c in (squash(MARKER_RE.sub("", text[a:b]))
                                  for a, b in sentence_spans(text)) if len(c) >= 12]
            ps: dict[str, list[float]] = {"separate": [], "shared": []}
            if not claims:
                continue
            # as after generation: the generator's prompt in the cache, then every sentence
            # checked one way, then the other (the checker's prompt reads each passage)
            p_yes(gen)
            t0 = time.perf_counter()
            ps["shared"] = [p_yes(shared_check_messages(gen, c)) for c in claims]
            seconds["shared"].append((time.perf_counter() - t0) / len(claims))
            t0 = time.perf_counter()
            ps["separate"] = [max(p_yes(claim_messages(c, passage_block(p.text)))
                                  for p in passages) for c in claims]
            seconds["separate"].append(
                (time.perf_counter() - t0) / (len(claims) * max(1, len(passages))))
            for name, xs in ps.items():
                if item["label"] == "C":
                    confirmed[name] += [x >= SUPPORT_AT for x in xs]
                if xs:
                    means[name][item["label"]].append(sum(xs) / len(xs))
            log.write(json.dumps({"id": item["id"], "label": item["label"], **ps}) + "\n")
    figures: dict[str, Any] = {"split": split, "answers": len(items)}
    for name in ("separate", "shared"):
        figures[f"{name}.auc_correct_vs_incorrect"] = auc(means[name]["C"], means[name]["I"])
        figures[f"{name}.correct_answer_sentences_confirmed"] = (
            sum(confirmed[name]) / len(confirmed[name]) if confirmed[name] else float("nan"))
        figures[f"{name}.sentence_check_s_p50"] = (median(seconds[name]) if seconds[name]
                                                   else float("nan"))
    report("check_prompts", figures)


if __name__ == "__main__":
    main()
