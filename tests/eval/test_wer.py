"""Word error rate, as the ASR bench reports it."""

from __future__ import annotations

import pytest

from eval.wer import word_error_rate


def test_word_error_rate_counts_edits_per_reference_word() -> None:
    ref = "A derivada mede a taxa de variação."
    assert word_error_rate(ref, "a derivada, mede a taxa de variação") == 0.0
    assert word_error_rate(ref, "A derivada mede taxa de variação.") == pytest.approx(1 / 7)
    assert word_error_rate(ref, "A de vada mede a taxa de variação.") == pytest.approx(2 / 7)
    assert word_error_rate(ref, "") == 1.0
    assert word_error_rate("", "") == 0.0
