"""Questions wrapped the way students wrap them in a chat: a greeting or an apology before,
thanks or an aside after. Used by the retrieval and gate benches to measure what the framing
costs and what ``corpus.query.strip_framing`` wins back.

The rules were designed on other phrasings, then corrected once after a measurement on
``DEV_OPENINGS``/``DEV_CLOSINGS``; ``OPENINGS``/``CLOSINGS`` were written after that and never
read while the rules changed, so the figures are not a measure of the rules against
themselves. Each question gets one opening and one closing, the same every run for the same
seed."""

from __future__ import annotations

import random

OPENINGS = {
    "pt": [
        "fala pessoal, ", "boa tarde professora, ", "oi oi, ", "e ai turma, tudo bem? ",
        "perdão se já perguntaram mas ", "to travada nisso: ", "uma duvida rapidinha, ",
        "alguém me socorre? ", "olá a todos! ", "me tira uma duvida: ", "gente, ", "",
    ],
    "en": [
        "hey folks, ", "hi professor! ", "apologies if this was asked already, ",
        "I'm stuck on this: ", "hello, ", "",
    ],
}
CLOSINGS = {
    "pt": [
        " brigadão!", " kkkkk socorro", " agradeço muito", " (revisando pra P1)", " vlw!!",
        " tô boiando total", " :)", " hehe", " obrigado pessoal", " alguém?", "",
    ],
    "en": [
        " thank you so much!", " :)", " haha", " (studying for the final)", " any ideas?", "",
    ],
}
"""Written after the rules' first measurement, which read an earlier list (now
``DEV_OPENINGS``/``DEV_CLOSINGS``, kept to show the difference): these were never looked at
while the rules were changed."""

DEV_OPENINGS = {
    "pt": [
        "bom dia prof! ", "eae pessoal, ", "boa noite, ", "socorro kkkk ", "gente me ajuda aqui: ",
        "desculpa a pergunta boba mas ", "uma pergunta: ", "ola, ", "pessoal do grupo, ",
        "sei que é besteira mas ", "oii, ", "alguem consegue me explicar ", "",
    ],
    "en": [
        "hey all, ", "good morning! ", "sorry if this is a dumb question but ", "hi, ",
        "quick one: ", "can someone help me out here: ", "hello everyone, ", "",
    ],
}
DEV_CLOSINGS = {
    "pt": [
        " valeu!", " vlw galera", " rsrs", " desde ja agradeço", " alguem ai?",
        " to quebrando a cabeça com isso", " me salvem", " haha", " (to revisando a materia)",
        " obrigada desde já!!", " nao consegui entender pelo video", "",
    ],
    "en": [
        " thanks!", " thx in advance", " lol", " been stuck on this for hours",
        " (reviewing for the midterm)", " any help appreciated!", " cheers", "",
    ],
}


def with_framing(question: str, seed: str, lang: str = "pt", *, dev: bool = False) -> str:
    """``question`` with one opening and one closing from ``lang``'s lists, picked by
    ``seed``; the opening lower-cases the question's first letter, as a student types on."""
    rng = random.Random(f"framing-{seed}")
    opening = rng.choice((DEV_OPENINGS if dev else OPENINGS)[lang])
    closing = rng.choice((DEV_CLOSINGS if dev else CLOSINGS)[lang])
    if opening and question[:1].isupper() and not question[1:2].isupper():
        question = question[:1].lower() + question[1:]
    return f"{opening}{question}{closing}"
