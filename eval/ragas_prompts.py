"""Portuguese instructions and few-shot examples for the ragas prompts the metrics use.

Plain data (instruction plus (input, output) example pairs as dicts), turned into ragas' own
prompt objects by ``portuguese_prompts``; why we ship them is in ``eval.ragas_metrics``.
"""

from __future__ import annotations

from typing import Any

_FOTOSSINTESE = (
    "Na aula, a professora explica que a fotossíntese ocorre nos cloroplastos. A luz é "
    "absorvida pela clorofila e a energia é usada para produzir glicose a partir de gás "
    "carbônico e água, liberando oxigênio."
)

PORTUGUESE_PROMPTS: dict[str, dict[str, Any]] = {
    "statements": {
        "instruction": (
            "Dada uma pergunta e uma resposta, divida cada frase da resposta em uma ou mais "
            "afirmações completas e compreensíveis isoladamente. Não use pronomes nas "
            "afirmações. Escreva as afirmações em português."
        ),
        "examples": [
            (
                {
                    "question": "Onde ocorre a fotossíntese e o que ela produz?",
                    "answer": "Ela ocorre nos cloroplastos. Produz glicose e libera oxigênio.",
                },
                {
                    "statements": [
                        "A fotossíntese ocorre nos cloroplastos.",
                        "A fotossíntese produz glicose.",
                        "A fotossíntese libera oxigênio.",
                    ]
                },
            )
        ],
    },
    "nli": {
        "instruction": (
            "Julgue a fidelidade de cada afirmação ao contexto dado. Para cada afirmação, dê "
            "verdict 1 se ela pode ser inferida diretamente do contexto e 0 se não pode. "
            "Escreva o motivo (reason) em português."
        ),
        "examples": [
            (
                {
                    "context": _FOTOSSINTESE,
                    "statements": [
                        "A fotossíntese ocorre nos cloroplastos.",
                        "A fotossíntese ocorre nas mitocôndrias.",
                        "A fotossíntese foi descoberta em 1779.",
                    ],
                },
                {
                    "statements": [
                        {
                            "statement": "A fotossíntese ocorre nos cloroplastos.",
                            "reason": "O contexto diz exatamente isso.",
                            "verdict": 1,
                        },
                        {
                            "statement": "A fotossíntese ocorre nas mitocôndrias.",
                            "reason": "O contexto diz que ocorre nos cloroplastos, não nas "
                            "mitocôndrias.",
                            "verdict": 0,
                        },
                        {
                            "statement": "A fotossíntese foi descoberta em 1779.",
                            "reason": "O contexto não menciona quando a fotossíntese foi "
                            "descoberta.",
                            "verdict": 0,
                        },
                    ]
                },
            )
        ],
    },
    "relevance": {
        "instruction": (
            "Escreva, em português, a pergunta que a resposta dada responde, e diga se a "
            "resposta é evasiva. Dê noncommittal 1 se a resposta é evasiva, vaga ou ambígua "
            '(por exemplo "não sei", "não tenho certeza", "depende", "as aulas não tratam '
            'disso") e 0 se ela responde de fato.'
        ),
        "examples": [
            (
                {"response": "A fotossíntese ocorre nos cloroplastos."},
                {"question": "Onde ocorre a fotossíntese?", "noncommittal": 0},
            ),
            (
                {
                    "response": "Não sei qual foi a nota da prova de 2023; as aulas não falam "
                    "disso."
                },
                {"question": "Qual foi a nota da prova de 2023?", "noncommittal": 1},
            ),
        ],
    },
    "precision": {
        "instruction": (
            "Dados uma pergunta, uma resposta e um contexto, verifique se o contexto foi útil "
            "para chegar à resposta. Dê verdict 1 se foi útil e 0 se não foi, com o motivo "
            "(reason) em português."
        ),
        "examples": [
            (
                {
                    "question": "Onde ocorre a fotossíntese?",
                    "context": _FOTOSSINTESE,
                    "answer": "Nos cloroplastos.",
                },
                {
                    "reason": "O contexto diz que a fotossíntese ocorre nos cloroplastos.",
                    "verdict": 1,
                },
            ),
            (
                {
                    "question": "Onde ocorre a fotossíntese?",
                    "context": "A mitocôndria é a organela responsável pela respiração celular.",
                    "answer": "Nos cloroplastos.",
                },
                {
                    "reason": "O contexto trata da respiração celular, não da fotossíntese.",
                    "verdict": 0,
                },
            ),
        ],
    },
    "recall": {
        "instruction": (
            "Dados um contexto e uma resposta, analise cada afirmação da resposta e classifique "
            "se ela pode ser atribuída ao contexto: attributed 1 se pode, 0 se não pode. "
            "Escreva as afirmações e os motivos (reason) em português."
        ),
        "examples": [
            (
                {
                    "question": "O que é a fotossíntese?",
                    "context": _FOTOSSINTESE,
                    "answer": "A fotossíntese produz glicose e libera oxigênio. Ela foi "
                    "descrita por Ingenhousz.",
                },
                {
                    "classifications": [
                        {
                            "statement": "A fotossíntese produz glicose e libera oxigênio.",
                            "reason": "O contexto diz que a fotossíntese produz glicose e "
                            "libera oxigênio.",
                            "attributed": 1,
                        },
                        {
                            "statement": "A fotossíntese foi descrita por Ingenhousz.",
                            "reason": "O contexto não menciona Ingenhousz.",
                            "attributed": 0,
                        },
                    ]
                },
            )
        ],
    },
}
"""Per prompt key: the instruction and the few-shot (input, output) pairs, as plain dicts."""


def _prompt_models() -> dict[str, tuple[Any, Any, Any]]:
    """Per prompt key: ragas' (prompt, input model, output model) classes. Imported here, not
    at module level, so ragas is only loaded by ``eval.ragas_metrics`` (telemetry off first)."""
    from ragas.metrics.collections.answer_relevancy import util as relevance
    from ragas.metrics.collections.context_precision import util as precision
    from ragas.metrics.collections.context_recall import util as recall
    from ragas.metrics.collections.faithfulness import util as faithfulness

    return {
        "statements": (
            faithfulness.StatementGeneratorPrompt,
            faithfulness.StatementGeneratorInput,
            faithfulness.StatementGeneratorOutput,
        ),
        "nli": (
            faithfulness.NLIStatementPrompt,
            faithfulness.NLIStatementInput,
            faithfulness.NLIStatementOutput,
        ),
        "relevance": (
            relevance.AnswerRelevancePrompt,
            relevance.AnswerRelevanceInput,
            relevance.AnswerRelevanceOutput,
        ),
        "precision": (
            precision.ContextPrecisionPrompt,
            precision.ContextPrecisionInput,
            precision.ContextPrecisionOutput,
        ),
        "recall": (
            recall.ContextRecallPrompt,
            recall.ContextRecallInput,
            recall.ContextRecallOutput,
        ),
    }


def portuguese_prompts() -> dict[str, Any]:
    """ragas' prompt objects with the Portuguese instructions and examples, language set.
    Keys: ``statements``, ``nli``, ``relevance``, ``precision``, ``recall``."""
    prompts: dict[str, Any] = {}
    for key, (prompt_cls, input_cls, output_cls) in _prompt_models().items():
        spec = PORTUGUESE_PROMPTS[key]
        prompt = prompt_cls()
        prompt.instruction = spec["instruction"]
        prompt.examples = [
            (input_cls.model_validate(given), output_cls.model_validate(expected))
            for given, expected in spec["examples"]
        ]
        prompt.language = "portuguese"
        prompts[key] = prompt
    return prompts
