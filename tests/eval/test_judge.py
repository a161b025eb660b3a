"""Judge prompts, reply parsers, the retry/sampling loop, and the labels drawn from scores."""

from __future__ import annotations

import json

import pytest

from eval.judge import (
    CORRECTNESS,
    RELEVANCE,
    ChatFn,
    build_messages,
    correctness_fields,
    format_contexts,
    judge_item,
    parse_correctness,
    parse_relevance,
)
from eval.labels import (
    Thresholds,
    ar_only_label,
    combined_label,
    fit_thresholds,
    normalise_label,
)

Messages = list[dict[str, str]]


def canned(*replies: str) -> tuple[ChatFn, list[Messages]]:
    """A deterministic ChatFn: the replies in sequence (the last one repeats); records calls."""
    calls: list[Messages] = []

    def chat(messages: Messages) -> str:
        calls.append(messages)
        return replies[min(len(calls), len(replies)) - 1]

    return chat, calls


COT = (
    "Criteria: The RESPONSE must be relevant to the entire PROMPT to receive a maximum score "
    "of 3.\nSupporting Evidence: It explains what TensorBoard is.\nScore: {}"
)


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        (COT.format(3), 3),
        ("Criteria: x\n**Score:** 3", 3),
        ("**Score**: 2", 2),
        ("Score: 3/3", 3),
        ("score = 2", 2),
        ("Pontuação: 2", 2),
        ("Score: **1**.", 1),
        ("Supporting Evidence: weak.  Score: 0", 0),
        ("<think>Score: 0 maybe</think>\nCriteria: ok\nScore: 2", 2),
    ],
)
def test_parse_relevance_reads_score(reply: str, score: int) -> None:
    result = parse_relevance(reply)
    assert result.score == score
    assert result.error is None
    assert result.raw == reply


def test_parse_relevance_last_score_wins_and_keeps_reasoning() -> None:
    result = parse_relevance("Score: 1\nCriteria: on second thought\nScore: 3")
    assert result.score == 3
    assert result.reasoning.startswith("Criteria:")
    assert result.fraction == 1.0


@pytest.mark.parametrize("reply", ["Score: 5", "Score: -1", "Score: 8/10", "Score: 2.5"])
def test_out_of_scale_score_is_missing_not_zero(reply: str) -> None:
    result = parse_relevance(reply)
    assert result.score is None
    assert result.fraction is None
    assert result.error


def test_no_score_is_missing() -> None:
    result = parse_relevance("Criteria: the response is relevant to a maximum score of 3.")
    assert result.score is None
    assert result.error == "no score found"


def test_parse_correctness_counts_claims() -> None:
    reply = """Claims:
- TensorBoard is a callback => SUPPORTED [2]
- It runs on a GPU only => CONTRADICTED
- It was written by Google => NOT MENTIONED
2. It saves logs to a directory => supported
Addresses question: YES
Score: 1"""
    result = parse_correctness(reply)
    assert result.score == 1
    assert result.claims is not None
    assert (result.claims.supported, result.claims.contradicted, result.claims.not_mentioned) == (
        2,
        1,
        1,
    )
    assert result.claims.total == 4
    assert result.addresses_question is True


def test_parse_correctness_without_claim_list() -> None:
    result = parse_correctness("The answer is wrong.\nAddresses question: NO\nScore: 0")
    assert (result.score, result.claims, result.addresses_question) == (0, None, False)


def test_format_contexts_numbers_and_shares_budget() -> None:
    long_a, long_b, short = "palavra " * 500, "outra " * 500, "curto"
    text = format_contexts([long_a, short, long_b], max_chars=1000)
    blocks = text.split("\n\n")
    assert [b[:4] for b in blocks] == ["[1] ", "[2] ", "[3] "]
    assert blocks[1] == "[2] curto"  # short segments are kept whole
    assert blocks[0].endswith("…") and blocks[2].endswith("…")
    body = sum(len(b) - 4 for b in blocks)
    assert 900 <= body <= 1000
    assert format_contexts([]) == "(no segments)"


def test_build_messages() -> None:
    messages = build_messages(RELEVANCE, question="O que é {x}?", answer="Uma chave {}.")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "Score:" in messages[0]["content"]
    assert "PROMPT: O que é {x}?" in messages[1]["content"]
    assert "RESPONSE: Uma chave {}." in messages[1]["content"]
    with pytest.raises(ValueError, match="answer"):
        build_messages(RELEVANCE, question="?")


def test_correctness_prompt_fits_small_judge() -> None:
    segments = ["fala da aula " * 170] * 10  # ten ~2k-character segments, like the study's
    fields = correctness_fields("O que é o TensorBoard?", "Uma ferramenta. " * 40, segments)
    assert fields["reference"] == "(none)"
    messages = build_messages(CORRECTNESS, **fields)
    chars = sum(len(m["content"]) for m in messages)
    assert chars < 16_000  # ~4.5k tokens of Portuguese: fits 8k with room for the reply
    assert "[10] " in messages[1]["content"]
    with_ref = correctness_fields("q", "a", ["s"], reference_answer=" Uma ferramenta. ")
    assert with_ref["reference"] == "Uma ferramenta."


def test_judge_item_retries_unreadable_reply() -> None:
    chat, calls = canned("I think it is fine.", COT.format(2))
    result = judge_item(chat, RELEVANCE, {"question": "q", "answer": "a"})
    assert result.score == 2
    assert result.attempts == 2
    assert len(calls) == 2
    assert calls[0][1]["content"].startswith("PROMPT: q")


def test_judge_item_gives_up_with_missing_score() -> None:
    chat, calls = canned("no idea", "still no idea", "Score: 7")
    result = judge_item(chat, RELEVANCE, {"question": "q", "answer": "a"}, retries=2)
    assert len(calls) == 3
    assert result.score is None
    assert result.error is not None and "3 replies" in result.error and "outside" in result.error
    assert result.raw == "Score: 7"


def test_judge_item_median_of_samples() -> None:
    chat, calls = canned("Score: 3", "garbage", "Score: 1", "Score: 2")
    result = judge_item(chat, RELEVANCE, {"question": "q", "answer": "a"}, samples=3)
    assert result.samples == (3, 1, 2)
    assert result.score == 2
    assert result.raw == "Score: 2"
    assert len(calls) == 4


def test_judge_item_propagates_transport_errors() -> None:
    def broken(messages: Messages) -> str:
        raise ConnectionError("down")

    with pytest.raises(ConnectionError):
        judge_item(broken, RELEVANCE, {"question": "q", "answer": "a"})


# Labels from scores ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "label"), [(3, "C"), (2, "PC"), (1, "PC"), (0, "I"), (None, None)]
)
def test_ar_only_label(score: int | None, label: str | None) -> None:
    assert ar_only_label(score) == label


def test_combined_label_rules() -> None:
    th = Thresholds(c_hi=3, a_min=2, c_lo=0, a_lo=0)
    assert combined_label(3, 3, th) == "C"
    assert combined_label(3, 2, th) == "PC"  # on topic but not fully supported
    assert combined_label(1, 3, th) == "PC"
    assert combined_label(3, 0, th) == "I"  # relevant but wrong
    assert combined_label(0, 3, th) == "I"
    assert combined_label(None, 3, th) is None
    assert combined_label(3, None, th) is None


def test_thresholds_json_round_trip() -> None:
    th = Thresholds(c_hi=2, a_min=3, c_lo=-1, a_lo=1)
    assert Thresholds.from_json(th.to_json()) == th
    assert json.loads(th.to_json()) == {"c_hi": 2, "a_min": 3, "c_lo": -1, "a_lo": 1,
                                        "support_at": 0.85}


def test_fit_thresholds_recovers_rules_and_skips_missing() -> None:
    truth = Thresholds(c_hi=2, a_min=1, c_lo=0, a_lo=-1)
    items: list[tuple[int | None, int | None, str | None]] = [
        (a, c, combined_label(a, c, truth)) for a in range(4) for c in range(4)
    ]
    items += [(None, 3, "I"), (3, None, "I"), (3, 3, None)]
    fitted = fit_thresholds(items)
    for ar, corr, manual in items:
        if ar is not None and corr is not None and manual is not None:
            assert combined_label(ar, corr, fitted) == manual
    with pytest.raises(ValueError):
        fit_thresholds([(None, None, "C")])


def test_normalise_label() -> None:
    assert normalise_label(" c ") == "C"
    assert normalise_label("Partially correct") == "PC"
    assert normalise_label("incorrect") == "I"
    assert normalise_label("") is None
    with pytest.raises(ValueError, match="talvez"):
        normalise_label("talvez")


def test_fit_learns_the_claim_support_level_and_leave_one_out_is_honest() -> None:
    from eval.labels import label_item, loo_labels

    # Right answers' claims sit high, wrong ones in the middle: only a high support level
    # separates them; all relevance scores are 3 (AR alone calls everything C).
    items = []
    for i in range(4):
        items.append((3, 3, "C", [0.97, 0.95 + i / 100]))
        items.append((3, 3, "I", [0.7, 0.75 - i / 100]))
        items.append((3, 3, "PC", [0.96, 0.72]))
    th = fit_thresholds(items)
    assert 0.75 < th.support_at <= 0.95
    assert [label_item(it, th, with_p=True) for it in items] == [m for _, _, m, _ in items]
    manual, predicted = loo_labels(items)
    assert manual == [m for _, _, m, _ in items] and predicted == manual
    # With nothing to learn from, leave-one-out says so instead of echoing the fit.
    noisy = [(3, 3, m, [0.9]) for m in ("C", "I", "PC", "C", "I", "PC")]
    _, guessed = loo_labels(noisy)
    assert sum(g == m for g, (_, _, m, _) in zip(guessed, noisy, strict=True)) < len(noisy)
