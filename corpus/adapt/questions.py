"""Student-style questions written by the configured LLM for passages of the index: the training
data of the course-adapted relevance model (as GPL, InPars and Promptagator make it).

Passages are the index's 30 s units, every other one (units overlap by half), taken round-robin
across lectures in a seeded order so that the first few hundred questions already cover the
course. Questions go to ``INDEX/adapted/questions.jsonl``, one line per passage as soon as it is
written (flushed), keyed by the unit's text hash: a rerun, after an interruption or with a
larger ``--questions``, asks only for passages that have none. A line cut short by a kill is
dropped on the next read (with a warning); the rest is kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from corpus.errors import InputError

log = logging.getLogger(__name__)

QUESTIONS_FILE = "questions.jsonl"

PROMPTS = {
    "pt": (
        "Trecho da transcrição de uma aula:\n\"\"\"\n{passage}\n\"\"\"\n\n"
        "Escreva UMA pergunta curta que um aluno do curso digitaria no chat da turma e que "
        "este trecho responde. Escreva como aluno (informal, sem citar \"o trecho\"), sobre o "
        "conteúdo explicado. Responda só com a pergunta."
    ),
    "en": (
        "Excerpt from a lecture transcript:\n\"\"\"\n{passage}\n\"\"\"\n\n"
        "Write ONE short question a student of the course would type in the class chat that "
        "this excerpt answers. Write as a student (informal, without mentioning \"the "
        "excerpt\"), about what is explained. Reply with the question only."
    ),
}
SYSTEM = {
    "pt": "Você escreve perguntas de alunos sobre aulas gravadas.",
    "en": "You write students' questions about recorded lectures.",
}
MIN_PASSAGE_CHARS = 120
"""A unit shorter than this (a pause, a greeting) gets no question."""


@dataclass(frozen=True)
class Passage:
    """One 30 s unit of a lecture a question is written for."""

    key: str
    lecture_id: str
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class GeneratedQuestion:
    """A question the LLM wrote for a passage (``question`` None: the reply was not one)."""

    key: str
    lecture_id: str
    start: float
    end: float
    question: str | None
    model: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)


def _order_key(seed: int, text: str) -> str:
    return hashlib.sha256(f"{seed}:{text}".encode()).hexdigest()


def passages(units: Any, *, seed: int = 0) -> list[Passage]:
    """Every other unit of each lecture (units overlap by half), at least
    ``MIN_PASSAGE_CHARS`` long, in the order questions are asked for them: lectures in turn
    (each lecture's passages in a seeded shuffle), so any prefix covers the course evenly."""
    by_lecture: dict[str, list[Passage]] = {}
    for lecture_id, group in units.sort_values(["lecture_id", "start"]).groupby(
            "lecture_id", sort=True):
        picked = [
            Passage(str(r.text_hash), str(lecture_id), float(r.start), float(r.end),
                    " ".join(str(r.text).split()))
            for i, r in enumerate(group.itertuples(index=False)) if i % 2 == 0
        ]
        picked = [p for p in picked if len(p.text) >= MIN_PASSAGE_CHARS]
        picked.sort(key=lambda p: _order_key(seed, p.key + p.lecture_id))
        by_lecture[str(lecture_id)] = picked
    order = sorted(by_lecture, key=lambda lec: _order_key(seed, lec))
    out: list[Passage] = []
    seen: set[str] = set()
    for turn in range(max((len(v) for v in by_lecture.values()), default=0)):
        for lec in order:
            if turn < len(by_lecture[lec]) and by_lecture[lec][turn].key not in seen:
                seen.add(by_lecture[lec][turn].key)
                out.append(by_lecture[lec][turn])
    return out


_LABEL = re.compile(r"^\s*(?:\*\*)?(?:pergunta|question|aluno|student|q)\s*\d*\s*[:\-–]\s*",
                    re.IGNORECASE)


def parse_question(reply: str) -> str | None:
    """The question in an LLM's reply: its first line that reads as one, without a label
    ("Pergunta:"), list mark or quotes; None when the reply holds no question of 3-40 words."""
    for line in reply.splitlines():
        line = _LABEL.sub("", line.strip().lstrip("-*•0123456789. ").strip())
        line = line.strip().strip("\"'“”«»*").strip()
        if "?" not in line:
            continue
        line = line[: line.rindex("?") + 1]
        if 3 <= len(line.split()) <= 40:
            return line
    return None


_WORD = re.compile(r"[^\W\d_]{5,}")


@functools.cache
def _everyday() -> frozenset[str]:
    from corpus.language import common_words

    return common_words("pt") | common_words("en")


def specific_words(text: str) -> set[str]:
    """The words of ``text`` of five letters or more that are not among the language's 2,000
    most frequent, by their first five letters, accents folded."""
    from corpus.text import fold

    everyday = _everyday()
    return {w[:5] for w in _WORD.findall(fold(text.lower())) if w not in everyday}


def grounded(question: str, passage: str) -> bool:
    """Whether the question names something the passage says (a word of five letters or more
    that is not among the language's 2,000 most frequent, by its first five, accents folded):
    the small model answers a chatty passage with an assistant's line ("Como posso ajudar você
    hoje?"), which is no student's question about it."""
    return bool(specific_words(question) & specific_words(passage))


class QuestionCache:
    """``questions.jsonl``: the generated questions so far, one line per passage."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[str, GeneratedQuestion] = {}
        if path.exists():
            self._read()

    def _read(self) -> None:
        lines = self.path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                q = GeneratedQuestion(**row)
            except (json.JSONDecodeError, TypeError) as exc:
                if number == len(lines):  # a line cut short by an interrupted run
                    log.warning("%s: line %d cut short, dropped; its passage is asked again",
                                self.path, number)
                    self._truncate(lines[: number - 1])
                    return
                raise InputError(f"{self.path}: line {number}: not a generated question "
                                 f"({exc})") from None
            self.rows[q.key] = q

    def _truncate(self, keep: Sequence[str]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(line + "\n" for line in keep), encoding="utf-8")
        os.replace(tmp, self.path)

    def __contains__(self, key: str) -> bool:
        return key in self.rows

    def questions(self) -> list[GeneratedQuestion]:
        """The rows that hold a question, in the order they were written."""
        return [q for q in self.rows.values() if q.question]

    def add(self, rows: Iterable[GeneratedQuestion]) -> Iterator[GeneratedQuestion]:
        """Append ``rows``, each flushed to disk as it comes (an interruption keeps them)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            for row in rows:
                f.write(row.to_json() + "\n")
                f.flush()
                os.fsync(f.fileno())
                self.rows[row.key] = row
                yield row


Ask = Callable[[Passage], str]
"""The LLM's reply to the question prompt for a passage."""


def prompt_messages(passage: Passage, lang: str) -> list[dict[str, str]]:
    lang = "en" if lang == "en" else "pt"
    return [{"role": "system", "content": SYSTEM[lang]},
            {"role": "user", "content": PROMPTS[lang].format(passage=passage.text)}]


def chat_asker(llm: Any, lang: str, *, temperature: float = 0.7, max_tokens: int = 80) -> Ask:
    """An ``Ask`` over a chat client (``app.llm.LLMClient``)."""

    def ask(passage: Passage) -> str:
        return str(llm.chat(prompt_messages(passage, lang), temperature=temperature,
                            max_tokens=max_tokens))

    return ask


def todo(cache: QuestionCache, candidates: Sequence[Passage], target: int) -> list[Passage]:
    """The passages to ask for so that the cache holds ``target`` rows (questions or refusals
    alike: a passage the LLM found no question for is not asked again)."""
    missing = max(0, target - sum(1 for p in candidates if p.key in cache))
    return [p for p in candidates if p.key not in cache][:missing]


def written(passage: Passage, reply: str, model: str) -> GeneratedQuestion:
    """The row stored for a reply: its question, or None when it holds none the passage
    grounds."""
    question = parse_question(reply)
    if question is not None and not grounded(question, passage.text):
        question = None
    return GeneratedQuestion(passage.key, passage.lecture_id, passage.start, passage.end,
                             question, model)


def generate(cache: QuestionCache, passages_todo: Sequence[Passage], ask: Ask, model: str, *,
             progress: bool = False) -> int:
    """Ask for a question for each passage in turn, each stored as it comes; the count of
    questions written (replies that held none are stored too, as such)."""
    from tqdm import tqdm

    def rows() -> Iterator[GeneratedQuestion]:
        for p in tqdm(passages_todo, desc="questions", unit="passage", disable=not progress):
            yield written(p, ask(p), model)

    return sum(1 for row in cache.add(rows()) if row.question)
