"""The answer bench's targets: a figure past its bound reads as not met, on the right side."""

import math

from bench.answer_targets import target_lines


def _figures(**over: float) -> dict[str, float]:
    base = {"correct_C": 0.6, "correct_PC": 0.2, "correct_I": 0.08, "declined_uncovered": 1.0,
            "declined_covered": 0.04, "total_s_p50": 5.5, "search_s_p50": 0.06, "unlabelled": 0}
    return {**base, **over}


def test_the_captions_targets_met_and_not_met() -> None:
    lines = target_lines("3b1b", _figures(correct_I=0.12, declined_covered=0.27))
    assert lines["wrong (I)"].endswith("NOT met")  # 12% wrong against at most 10%
    assert lines["covered declined"].endswith("NOT met")
    assert lines["right (C)"].endswith(": met")
    assert lines["right or partly (C + PC)"].startswith("0.800")
    assert lines["right or partly (C + PC)"].endswith(": met")  # the bound itself is met
    exact = target_lines("3b1b", _figures(correct_C=0.7, correct_PC=0.1))  # 0.7999... in floats
    assert exact["right or partly (C + PC)"].endswith(": met")


def test_the_live_classes_are_held_to_their_own_bounds() -> None:
    figures = _figures(correct_C=0.54, correct_PC=0.12, correct_I=0.12)
    assert target_lines("fastapi", figures)["wrong (I)"].endswith(": met")  # at most 15%
    assert target_lines("3b1b", figures)["wrong (I)"].endswith("NOT met")
    assert target_lines("fastapi", figures)["right or partly (C + PC)"].endswith("NOT met")


def test_unmeasured_and_unlabelled_are_said() -> None:
    lines = target_lines("3b1b", _figures(total_s_p50=math.nan, unlabelled=3))
    assert lines["whole answer p50 (s)"].startswith("not measured")
    assert lines["unlabelled answers"].startswith("3 ")


def test_a_share_carries_its_interval_over_the_questions_it_counts() -> None:
    few = target_lines("3b1b", _figures(correct_I=0.12, answerable=25))["wrong (I)"]
    many = target_lines("3b1b", _figures(correct_I=0.12, answerable=250))["wrong (I)"]
    low, high = (float(x) for x in few.split("[")[1].split("]")[0].split(", "))
    assert low < 0.12 < high
    wide = high - low
    low, high = (float(x) for x in many.split("[")[1].split("]")[0].split(", "))
    assert high - low < wide / 2  # ten times the questions, a much narrower interval
