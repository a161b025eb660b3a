"""The generator's prompts, typed: the numbered lecture excerpts every prompt shows, and the
instructions of each strategy (``direct``: the top windows, with an escape sentence; ``gated``:
only the passages that passed the gate, none), in the question's language."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.llm import Message
from corpus.context import CONTEXT_CHARS, Passage, fit_texts
from corpus.language import Lang, detect_language
from corpus.models import Hit

MIN_SEGMENT_CHARS = 1000
"""A segment shorter than this after truncation is left out rather than shown as a stub."""

NOT_COVERED: dict[Lang, str] = {
    "pt": "As aulas não cobrem esta pergunta.",
    "en": "The lectures don't cover this question.",
}

_PROMPTS: dict[Lang, dict[str, str]] = {
    "pt": {
        "system": (
            "Você é um assistente que responde perguntas de estudantes usando SOMENTE trechos "
            "de transcrições de aulas gravadas.\n"
            "Regras:\n"
            "1. Responda em português, de forma clara e direta, em poucos parágrafos.\n"
            "2. Use apenas a informação dos trechos numerados. Não invente nada.\n"
            "3. Depois de cada afirmação, cite o trecho de onde ela veio com o número entre "
            "colchetes, por exemplo [1] ou [2, 3].\n"
            "4. Só se NENHUM trecho tiver informação sobre a pergunta, responda apenas: "
            "{not_covered}"
        ),
        "segments": "Trechos das aulas:",
        "segment": "[{n}] Aula: {title} ({span})",
        "question": "Pergunta: {question}",
        # Ending on the escape sentence made the 1.5B model refuse answerable questions.
        "reminder": "Responda à pergunta usando os trechos acima e cite-os como [n].",
    },
    "en": {
        "system": (
            "You are an assistant that answers students' questions using ONLY excerpts of "
            "recorded lecture transcripts (which may be in Portuguese).\n"
            "Rules:\n"
            "1. Answer in English, clearly and directly, in a few paragraphs.\n"
            "2. Use only the information in the numbered excerpts. Do not make anything up.\n"
            "3. After each statement, cite the excerpt it comes from with its number in square "
            "brackets, for example [1] or [2, 3].\n"
            "4. Only if NO excerpt has information about the question, reply only: {not_covered}"
        ),
        "segments": "Lecture excerpts:",
        "segment": "[{n}] Lecture: {title} ({span})",
        "question": "Question: {question}",
        "reminder": "Answer the question using the excerpts above and cite them as [n].",
    },
}

_GATED_PROMPTS: dict[Lang, dict[str, str]] = {
    "pt": {
        "system": (
            "Você é um monitor que responde perguntas de estudantes usando SOMENTE os trechos "
            "de aulas gravadas dados abaixo.\n"
            "Regras:\n"
            "1. {rule}\n"
            "2. Use apenas a informação dos trechos. Não invente nada.\n"
            "3. Termine cada frase com o número do trecho de onde ela veio entre colchetes, "
            "por exemplo [1] ou [1, 2]."
        ),
        "rule": "Responda em português, de forma clara e direta, em no máximo três frases.",
        "summary_rule": ("Responda em português: resuma a aula em no máximo cinco frases, na "
                         "ordem dos trechos, que seguem a ordem da aula."),
        "segments": "Trechos das aulas:",
        "segment": "[{n}] Aula: {title} ({span})",
        "question": "Pergunta do estudante: {question}",
        "reminder": "Responda à pergunta com base nos trechos acima, citando-os como [n].",
        "summary_reminder": "Resuma a aula com base nos trechos acima, citando-os como [n].",
        "compare_reminder": ("A pergunta compara {a} e {b}: diga numa frase o que os trechos "
                             "dizem de {a}, noutra o que dizem de {b}, e termine cada frase com "
                             "o número do trecho de onde ela veio [n]."),
    },
    "en": {
        "system": (
            "You are a teaching assistant who answers students' questions using ONLY the "
            "recorded lecture excerpts below (they may be in Portuguese).\n"
            "Rules:\n"
            "1. {rule}\n"
            "2. Use only the information in the excerpts. Do not make anything up.\n"
            "3. End each sentence with the number of the excerpt it comes from in square "
            "brackets, for example [1] or [1, 2]."
        ),
        "rule": "Answer in English, clearly and directly, in at most three sentences.",
        "summary_rule": ("Answer in English: sum up the lecture in at most five sentences, in "
                         "the order of the excerpts, which follow the lecture's order."),
        "segments": "Lecture excerpts:",
        "segment": "[{n}] Lecture: {title} ({span})",
        "question": "Student's question: {question}",
        "reminder": "Answer the question from the excerpts above, citing them as [n].",
        "summary_reminder": "Sum up the lecture from the excerpts above, citing them as [n].",
        "compare_reminder": ("The question compares {a} and {b}: say in one sentence what the "
                             "excerpts say of {a}, in another what they say of {b}, and end "
                             "each sentence with the number of the excerpt it comes from [n]."),
    },
}


@dataclass(frozen=True)
class Excerpt:
    """One numbered excerpt of a prompt: the lecture, its span, and the text shown."""

    title: str
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Prompt:
    """A chat prompt: the system rules and the user turn (excerpts, question, reminder)."""

    system: str
    user: str

    @property
    def messages(self) -> list[Message]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]


def fmt_clock(seconds: float) -> str:
    """``mm:ss``, or ``h:mm:ss`` from the first hour on."""
    s = max(0, int(seconds))
    if s >= 3600:
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{s // 60:02d}:{s % 60:02d}"


def excerpts_block(texts: dict[str, str], excerpts: Sequence[Excerpt], question: str,
                   reminder: str) -> str:
    """The user turn: the excerpts numbered ``[1]..[n]`` with lecture and span, the question,
    and the closing reminder (``texts``: a language's prompt texts)."""
    blocks = []
    for n, e in enumerate(excerpts, start=1):
        span = f"{fmt_clock(e.start)}–{fmt_clock(e.end)}"
        blocks.append(f"{texts['segment'].format(n=n, title=e.title, span=span)}\n{e.text}")
    return "\n\n".join([texts["segments"], *blocks,
                         texts["question"].format(question=question.strip()), reminder])


def fit_segments(
    hits: Sequence[Hit], budget: int = CONTEXT_CHARS, min_chars: int = MIN_SEGMENT_CHARS
) -> list[str]:
    """Segment texts cut so that together they fit ``budget`` characters (``corpus.context``:
    the judges and ragas cut the same way). When a share would drop below ``min_chars``, the
    lowest-ranked segments are left out instead (always a prefix: numbering holds)."""
    return fit_texts([h.text for h in hits], budget, min_chars)


def build_messages(
    question: str, hits: Sequence[Hit], *, budget: int = CONTEXT_CHARS, lang: Lang | None = None
) -> tuple[list[Message], int]:
    """The ``direct`` prompt for ``question`` and how many of ``hits`` it shows (numbered
    1..n, cut to fit ``budget`` characters), in ``lang`` (else the question's language)."""
    lang = lang or detect_language(question)
    p = _PROMPTS[lang]
    texts = fit_segments(hits, budget)
    shown = [Excerpt(h.title or h.lecture_id, h.start, h.end, t)
             for h, t in zip(hits, texts, strict=False)]
    user = excerpts_block(p, shown, question, p["reminder"])
    return Prompt(p["system"].format(not_covered=NOT_COVERED[lang]), user).messages, len(texts)


def gated_messages(question: str, passages: Sequence[Passage], lang: Lang, *,
                   summary: bool = False, compare: tuple[str, str] | None = None
                   ) -> list[Message]:
    """The ``gated`` prompt: the passages that passed, numbered, and no escape sentence.
    ``summary``: the passages are one lecture's, in its order, to be summed up. ``compare``:
    the two subjects the question compares, each to be said from its passage."""
    p = _GATED_PROMPTS[lang]
    shown = [Excerpt(ps.hit.title or ps.hit.lecture_id, ps.start, ps.end, ps.text)
             for ps in passages]
    reminder = (p["summary_reminder"] if summary else
                p["compare_reminder"].format(a=compare[0], b=compare[1]) if compare else
                p["reminder"])
    system = p["system"].format(rule=p["summary_rule" if summary else "rule"])
    return Prompt(system, excerpts_block(p, shown, question, reminder)).messages
