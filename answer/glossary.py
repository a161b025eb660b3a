"""English names Brazilian students give a concept in a Portuguese question, with the words
Portuguese lectures say for it ("query, key e value" in a question about the attention
lecture, whose translation says "consulta", "chave" and "valor").

Read by the evidence gate's ``term_coverage`` only: a question's English term counts as found
when the retrieved windows say it or one of its Portuguese words. Search is not given these
words (a glossary in the query was measured and not taken: docs/search.md).
Keys and words are lower case without accents; a glossary word matches when the
windows say it whole or with the same Snowball stem (not by its first five letters, as the
question's own words match)."""

from __future__ import annotations

import re

ENGLISH_TO_PORTUGUESE: dict[str, tuple[str, ...]] = {
    # transformers and attention
    "attention": ("atencao",), "query": ("consulta",), "queries": ("consulta",),
    "key": ("chave",), "keys": ("chave",), "value": ("valor",), "values": ("valor",),
    "head": ("cabeca",), "heads": ("cabeca",), "embedding": ("incorporacao", "vetor"),
    "embeddings": ("incorporacao", "vetor"), "transformer": ("transformador",),
    "transformers": ("transformador",), "token": ("token", "pedaco"),
    "tokens": ("token", "pedaco"), "context": ("contexto",), "mask": ("mascara",),
    "masking": ("mascara",), "temperature": ("temperatura",),
    "unembedding": ("desincorporacao",), "softmax": ("softmax", "normalizar"),
    "llm": ("linguagem",), "llms": ("linguagem",),  # "grandes modelos de linguagem"
    "self": ("autoatencao",),  # "self-attention": "autoatenção" ("cross-": "atenção cruzada")
    # neural networks and training
    "neural": ("neural",), "network": ("rede",), "networks": ("rede",),
    "neuron": ("neuronio",), "neurons": ("neuronio",), "layer": ("camada",),
    "layers": ("camada",), "hidden": ("oculta", "escondida"), "weight": ("peso",),
    "weights": ("peso",), "bias": ("vies",), "biases": ("vies",), "loss": ("perda", "custo"),
    "cost": ("custo",), "gradient": ("gradiente",), "descent": ("descida", "descendente"),
    "backprop": ("retropropagacao",), "backpropagation": ("retropropagacao",),
    "learning": ("aprendizado", "aprendizagem"), "deep": ("profundo", "profunda"),
    "training": ("treinamento", "treino"), "train": ("treinar", "treino"),
    "dataset": ("dados",), "batch": ("lote",),
    "activation": ("ativacao",), "sigmoid": ("sigmoide",), "perceptron": ("perceptron",),
    "logits": ("logits",), "entropy": ("entropia",),
    # linear algebra
    "matrix": ("matriz",), "matrices": ("matriz",), "vector": ("vetor",),
    "vectors": ("vetor",), "eigenvector": ("autovetor",), "eigenvectors": ("autovetor",),
    "eigenvalue": ("autovalor",), "eigenvalues": ("autovalor",),
    "determinant": ("determinante",), "rank": ("posto", "classificacao"),
    "span": ("extensao", "gerado"), "basis": ("base",), "kernel": ("nucleo", "nulo"),
    "dot": ("escalar",), "cross": ("vetorial", "cruzada"), "linear": ("linear",),
    # calculus, probability and the rest
    "derivative": ("derivada",), "integral": ("integral",), "limit": ("limite",),
    "chain": ("cadeia",), "series": ("serie",), "convolution": ("convolucao",),
    "odds": ("chance",), "prior": ("priori", "anterior"), "likelihood": ("verossimilhanca",),
    "sample": ("amostra",), "random": ("aleatorio",), "noise": ("ruido",),
    "winding": ("enrolamento", "volta"), "lock": ("bloqueio",),
}
"""83 English names of about 62 concepts, most of them from machine learning, where students
keep the English word; each with the words 3b1b-pt's translation says for it ("consulta" 34
times, "chave" 128, "incorporação" 80, "retropropagação" 9). The gate matches these words whole
or by stem, not by their first five letters as it matches the question's own words: a
glossary's "sobreajuste" would have matched every "sobre"."""


def portuguese_words(term: str) -> tuple[str, ...]:
    """The Portuguese words a lecture may say for the English ``term`` (folded), or none."""
    return ENGLISH_TO_PORTUGUESE.get(term, ())


# English names of a concept (several words long, and three single words: "span",
# "rank" and a matrix's "posto") that the Portuguese lectures never say in
# English, with the words their translation says (counted over 3b1b-pt: "regra da cadeia" 24
# times, "produto escalar" 103, "função de custo" 43, "cabeça de atenção" 12, "chain rule",
# "dot product" and "loss" never). Read by the search of a Portuguese question only
# (``app.services.Services.search_query``), in place of the English name.
ENGLISH_PHRASES: tuple[tuple[str, str], ...] = (
    (r"central limit theorem", "teorema do limite central"),
    (r"chain rule", "regra da cadeia"),
    (r"product rule", "regra do produto"),
    (r"dot products?", "produto escalar"),
    (r"cross products?", "produto vetorial"),
    (r"(?:loss|cost) functions?", "função de custo"),
    (r"gradient descent", "descida do gradiente"),
    (r"attention heads?", "cabeça de atenção"),
    (r"self[- ]?attention", "autoatenção"),
    (r"cross[- ]?attention", "atenção cruzada"),
    (r"neural (?:networks?|nets?)", "rede neural"),
    (r"fourier transforms?", "transformada de fourier"),
    (r"fourier series", "série de fourier"),
    (r"taylor series", "série de taylor"),
    (r"linear transformations?", "transformação linear"),
    (r"matrix multiplication", "multiplicação de matrizes"),
    (r"change of basis", "mudança de base"),
    (r"null ?space", "espaço nulo"),
    (r"column space", "espaço de colunas"),
    (r"normal distribution", "distribuição normal"),
    (r"eigenvectors?", "autovetor"),
    (r"eigenvalues?", "autovalor"),
    (r"span", "extensão"),  # "span" 0 times in 3b1b-pt's text, "extensão" 12 in the span lecture
    (r"rank", "classificação"),  # 0 times; "classificação" 11 in the inverse-matrices lecture
    # not English, but the same fault: a matrix's "posto" is "classificação" in the lectures'
    # translation of "rank" (the issue's own example); "posto" alone stays (a health post)
    (r"posto(?=\s+(?:\([^)]*\)\s+)?(?:de\s+uma\s+matriz|da\s+matriz|de\s+matriz))",
     "classificação"),
    (r"(?<=matriz de )posto", "classificação"),
)
_PHRASES = [(re.compile(rf"\b{pattern}\b", re.I), words) for pattern, words in ENGLISH_PHRASES]


def in_lecture_words(question: str) -> str:
    """``question`` with each English name of ``ENGLISH_PHRASES`` in the Portuguese words the
    lectures say: "o que é a chain rule?" -> "o que é a regra da cadeia?"."""
    for pattern, words in _PHRASES:
        question = pattern.sub(words, question)
    return question
