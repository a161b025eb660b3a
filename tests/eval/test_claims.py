"""The claim-by-claim correctness judge: claims, yes/no probabilities, scores."""

from __future__ import annotations

import pytest

from eval.claims import (
    REFERENCE_LABEL,
    score_from_support,
    split_claims,
    verify_claims,
    yes_probability,
)
from eval.judge import parse_correctness


def test_claims_are_sentences_without_citations_or_markdown() -> None:
    answer = (
        "**A ReLU** devolve o máximo entre zero e a entrada [1]. Ela é barata de calcular [2, 3];"
        " por isso é a mais usada hoje.\n- Sim.\n- A sigmoide satura para valores grandes [4]."
    )
    assert split_claims(answer) == [
        "A ReLU devolve o máximo entre zero e a entrada.",
        "Ela é barata de calcular;",
        "por isso é a mais usada hoje.",
        "Sim. A sigmoide satura para valores grandes.",
    ]
    assert len(split_claims(" ".join(["Uma frase longa o bastante aqui."] * 30), 5)) == 5
    assert split_claims("[1] [2]") == []


@pytest.mark.parametrize(
    ("text", "probs", "expected"),
    [
        ("SIM", {"SIM": 0.6, " Sim": 0.2, "N": 0.1, "Não": 0.1}, 0.8),
        ("N", {"N": 0.84, "SIM": 0.06, "NA": 0.1}, 0.06),
        ("NÃO", None, 0.0),
        ("Sim, o texto confirma", None, 1.0),
        ("Talvez", {"Tal": 1.0}, None),
        ("YES", {"YES": 0.5, "NO": 0.5}, 0.5),
    ],
)
def test_yes_probability_reads_tokens_case_and_accent_blind(text, probs, expected) -> None:  # type: ignore[no-untyped-def]
    p = yes_probability(text, probs)
    assert p == (None if expected is None else pytest.approx(expected))


def test_score_follows_the_share_of_supported_claims() -> None:
    assert [score_from_support(s, 3) for s in range(4)] == [0, 1, 2, 3]
    assert score_from_support(1, 2) == 1 and score_from_support(0, 0) == 0
    assert score_from_support(4, 5) == 2


def fake_ask(verdicts: dict[str, str], seen: list[str] | None = None):  # type: ignore[no-untyped-def]
    """Answer SIM/NÃO by which keyword the claim holds; 'garbage' claims get no verdict."""

    def ask(messages):  # type: ignore[no-untyped-def]
        user = messages[-1]["content"]
        if seen is not None:
            seen.append(user)
        claim = user.split("AFIRMAÇÃO:", 1)[1]
        for word, reply in verdicts.items():
            if word in claim:
                return reply, None
        return "SIM", {"SIM": 0.9, "NÃO": 0.1}

    return ask


def test_a_wrong_claim_lowers_the_score_and_the_reasoning_says_which() -> None:
    ask = fake_ask({"banco de dados": "NÃO"})
    right = verify_claims(ask, "O TensorBoard mostra curvas de perda. Ele roda ao vivo.", ["x"])
    wrong = verify_claims(
        ask, "O TensorBoard é um banco de dados SQL. Ele roda ao vivo durante o treino.", ["x"]
    )
    assert right.score == 3 and wrong.score == 1
    assert wrong.claims is not None and wrong.claims.supported == 1
    assert "banco de dados SQL. => NOT SUPPORTED (P=0.00)" in wrong.reasoning
    again = parse_correctness(wrong.reasoning)  # the reasoning reads back as a CoT reply
    assert again.score == 1 and again.claims == wrong.claims


def test_reference_answer_is_shown_and_segments_come_first() -> None:
    seen: list[str] = []
    verify_claims(fake_ask({}, seen), "Uma afirmação qualquer sobre a aula.", ["trecho um"],
                  reference_answer="A resposta do professor.")
    assert seen and f"{REFERENCE_LABEL}: A resposta do professor." in seen[0]
    assert seen[0].index("trecho um") < seen[0].index("AFIRMAÇÃO")


def test_unreadable_claims_are_retried_then_left_out_never_counted_as_zero() -> None:
    calls: list[str] = []
    garbage = fake_ask({"estranha": "???"}, calls)
    res = verify_claims(garbage, "Uma frase estranha aqui sem veredito. Outra frase confirmada.",
                        ["x"], retries=1)
    assert len(calls) == 3  # the unreadable claim twice, the other once
    assert res.score == 3 and "=> UNREADABLE" in res.reasoning
    none = verify_claims(garbage, "Só uma frase estranha aqui.", ["x"])
    assert none.score is None and none.error and "no claim" in none.error


def test_the_strict_reading_is_kept_per_claim_and_the_verdicts_still_read_back() -> None:
    from eval.claims import STRICT_USER, probabilities_in

    def ask(messages):  # type: ignore[no-untyped-def]
        user = messages[-1]["content"]
        strict = "sem ressalvas" in user
        if "zera" in user.split("AFIRMAÇÃO:")[1]:
            return "SIM", {"SIM": 0.6 if strict else 0.95, "NÃO": 0.4 if strict else 0.05}
        return "NÃO", {"SIM": 0.3 if strict else 0.2, "NÃO": 0.7 if strict else 0.8}

    assert "sem ressalvas" in STRICT_USER
    answer = "A ReLU zera os valores negativos. A ReLU satura para valores positivos grandes."
    r = verify_claims(ask, answer, ["A ReLU zera os negativos."], strict=True)
    assert r.probabilities == pytest.approx((0.95, 0.2))
    assert r.strict == pytest.approx((0.6, 0.3))
    assert r.attempts == 4  # each claim asked both ways
    assert probabilities_in(r.reasoning) == pytest.approx([0.95, 0.2])
    assert verify_claims(ask, answer, ["A ReLU zera os negativos."]).strict == ()
