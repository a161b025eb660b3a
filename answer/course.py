"""Questions about the course rather than its subject: exams, grades, deadlines, materials.

"Qnd sai a nota da P2?", "o professor vai disponibilizar os slides?", "when is the homework
due?": recorded lectures cannot answer them, but their words are in the lectures ("slide",
"prova", "aula"), so retrieval scores them like a covered question, and the evidence gate, which
reads retrieval scores, let almost half of the gate bench's held-out Portuguese ones through (a
"slides" question got an answer about sliding a number line). Two cheaper ways were measured
and not taken:

- the embedded LLM, asked "is this question about the course's organisation?", said yes with
  P 0.74-0.91 to logistics questions and 0.79-0.86 to questions about mathematics;
- a list of phrasings (exam + "cai", "nota" + "sair", "prazo", "monitoria", ...), written with
  the benches' logistics questions in view, caught all of those but 5 of 20 new ones written
  afterwards, and flagged 4 of 20 new subject questions that use the same words ("a prova por
  indução", "no slide onde ele mostra", "the quiz at the end asked why ...").

So a logistic regression over the question's E5 ``query:`` vector (one more query embedding,
about 40 ms), fitted by ``aula fit-course`` on labelled questions and stored as JSON with the
embedder it reads (``answer/course.json`` ships the one fitted on the benches' fitting halves).
Its threshold is set above every subject question's cross-validated P on the fitting set, plus
a margin: declining an answerable question is the fault students meet most. A question over it
is declined with a line saying why and whom to ask, the closest moments still listed, unless the
default gate finds the lectures say it as surely as the quote strategy's cut asks (a gate with a
cut of its own keeps the check's word): a recorded live class
often answers questions about its course ("a edição do ano passado ficou obsoleta?"), and the
check also takes some questions on the subject for the course's ("o professor explicou a ReLU em
qual aula?"). Over 48 fitting questions on the course's organisation, the gate so read none
of them as said in 3b1b-pt or in the live classes (``docs/answers.md``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from corpus.errors import InputError
from corpus.jsonlines import read_objects
from corpus.query import QueryRewriter
from corpus.text import fold
from eval.fitting import cross_validated_p, fit_logistic
from eval.logistic import Logistic, field_of, json_object, number

DEFAULT_COURSE_FILE = Path(__file__).with_name("course.json")
_WRITTEN_OUT = QueryRewriter(framing=False, mentions=False)
"""Chat abbreviations written out, nothing else (no corpus vocabulary: no accents, no speller)."""
COURSE = "course logistics"
"""The ``kind`` of a course question in the question sets; ``answerable`` and any kind of
subject question (``neighbouring subject``, ``other subject``, ``subject``) are the others."""
SUBJECT_KINDS = frozenset({"answerable", "neighbouring subject", "other subject", "subject"})
MARGIN = 0.05

# The words a question about the course's organisation uses (accents folded): exams, grades,
# deadlines, materials, rooms, the course and its staff. Written from what such
# questions ask; 99 of the benches' 101 course questions said one (the other two said
# "trancamento" and "absences", added then).
COURSE_WORDS = frozenset("""
prova provas p1 p2 p3 exame exames avaliacao avaliacoes nota notas media conceito aprovado
reprovado reprovar passar prazo prazos entrega entregar lista listas exercicio exercicios
trabalho trabalhos tarefa tarefas projeto relatorio monitoria monitor monitores professor
professora prof profe aula aulas slide slides material materiais apostila livro bibliografia
ementa gravacao gravada gravacoes video videos horario horarios sala presenca falta faltas
frequencia calendario semestre disciplina materia cai cair caiu recuperacao substitutiva sub rec
quiz quizzes moodle drive email atendimento plantao reposicao feriado cronograma matricula
trancamento trancar turma curso grupo dupla gabarito resolucao plataforma link
homework exam exams midterm final finals grade grades grading deadline deadlines syllabus office
hours lecture lectures class classes course courses ta tas assignment assignments due
submission submit cheat sheet textbook recording recordings schedule attendance absence
absences project projects extension late credit
""".split())
# "prova" in a proof's sense: "a prova de trabalho do bitcoin", "a prova por indução"
_PROOF = re.compile(r"\bprovas? (?:de trabalho|por (?:inducao|contradicao|absurdo)|de que|"
                    r"visua(?:l|is)|geometricas?|formal|formais|elegantes?|bonitas?)\b")


def course_text(question: str) -> str:
    """What the check reads of ``question``: its chat abbreviations written out ("qnd" ->
    "quando", "vc" -> "você", "hj" -> "hoje"), as most of the questions it was fitted on are
    written, the rest as typed (a mention of the lecture or the teacher is a sign of a course
    question, so it stays). Twelve logistics questions typed in chat spellings, written for the
    check: 10 flagged as typed, 12 written out ("qnd sai a nota da p2?" 0.67 -> 0.88); twelve
    on the subject so typed: none either way."""
    return _WRITTEN_OUT(question)


def course_words(question: str) -> list[str]:
    """The words of the course's organisation ``question`` says (``COURSE_WORDS``; "prova" in
    a proof's sense is not one). A question with none is about the subject, whatever the
    classifier makes of its vector: "como o gpt prevê a próxima palavra?" was flagged at P 0.77
    and declined."""
    text = _PROOF.sub(" ", fold(question))
    return [w for w in re.findall(r"\w+", text) if w in COURSE_WORDS]


@dataclass(frozen=True)
class CourseCheck:
    """``P(course question) = sigmoid(weights · v + bias)`` over the ``query:`` E5 vector ``v``
    of ``model_id``; over ``threshold`` the question is one about the course."""

    model_id: str
    weights: tuple[float, ...]
    bias: float
    threshold: float
    fitted: dict[str, Any] = field(default_factory=dict)

    def p(self, vector: Sequence[float]) -> float:
        try:
            return Logistic(self.weights, self.bias).p(vector)
        except ValueError as exc:
            raise ValueError(f"{exc} ({self.model_id})") from None

    def is_course(self, vector: Sequence[float], question: str | None = None
                  ) -> tuple[bool, float]:
        """Over the threshold, and, given the ``question``, saying a word of the course's
        organisation (``course_words``)."""
        p = self.p(vector)
        return p >= self.threshold and (question is None or bool(course_words(question))), p

    def read(self, questions: Sequence[str], embed: Callable[[list[str], str], Any], *,
             written_out: bool = True) -> list[tuple[bool, float]]:
        """``is_course`` of each of ``questions`` as the check reads it: its chat abbreviations
        written out (``course_text``; as typed when not ``written_out``), embedded by ``embed``
        as queries in one call."""
        texts = [course_text(q) if written_out else q for q in questions]
        vectors = embed(texts, "query")
        return [self.is_course(v, t) for v, t in zip(vectors, texts, strict=True)]

    def to_json(self) -> str:
        data = asdict(self)
        data["weights"] = [round(w, 6) for w in self.weights]
        return json.dumps(data, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "course file") -> CourseCheck:
        raw = json_object(text, source)
        model_id = field_of(raw, "model_id", source)
        model = Logistic.from_dict(raw, source)
        threshold = number(raw, "threshold", source)
        if model.features or not model.weights or not 0.0 < threshold <= 1.0:
            raise InputError(f"{source}: field 'threshold' must be in (0, 1] and 'weights' "
                             "a list, not empty")
        return cls(str(model_id), model.weights, model.bias, threshold,
                   dict(raw.get("fitted") or {}))

    @classmethod
    def load(cls, path: Path | str | None) -> CourseCheck | None:
        """The check in ``path`` (the shipped one for None; none for ``off``)."""
        if str(path).lower() == "off":
            return None
        file = Path(path) if path is not None else DEFAULT_COURSE_FILE
        if not file.is_file():
            raise InputError(f"{file}: course check file not found (AULA_COURSE_FILE)")
        return cls.from_json(file.read_text(encoding="utf-8"), str(file))


def read_labelled(path: Path, split: str | None = "fit") -> list[tuple[str, bool]]:
    """``labelled`` over a JSON Lines file; a bad line raises one error naming file and line."""
    return labelled((row for _, row in read_objects(path)), split)


def labelled(rows: Iterable[dict[str, Any]], split: str | None = "fit"
             ) -> list[tuple[str, bool]]:
    """``(question, is_course)`` for the rows of ``split`` (rows without a split count too)
    whose ``kind`` says which; an answerable row without a kind (a ``gold_lecture``) is a
    subject question, other rows are left out."""
    out = []
    for row in rows:
        question = row.get("question")
        if not isinstance(question, str) or not question.strip():
            continue
        if split is not None and row.get("split", split) != split:
            continue
        kind = row.get("kind") or ("answerable" if row.get("gold_lecture") else None)
        if kind == COURSE or kind in SUBJECT_KINDS:
            out.append((question, kind == COURSE))
    return out


def fit(vectors: Any, is_course: Sequence[bool], model_id: str, *, c: float = 10.0,
        folds: int = 5, margin: float = MARGIN) -> CourseCheck:
    """A balanced logistic regression; the threshold is ``margin`` above the highest
    cross-validated P of a subject question (at least 0.5, at most 0.95)."""
    x = np.asarray(vectors, dtype=np.float64)
    y = np.asarray(is_course, dtype=bool)
    if y.sum() < folds or (~y).sum() < folds:
        raise InputError(f"need at least {folds} course and {folds} subject questions to fit "
                         f"(got {int(y.sum())} and {int((~y).sum())})")
    cv = cross_validated_p(x, y, c=c, folds=folds, max_iter=5000)
    threshold = float(min(0.95, max(0.5, cv[~y].max() + margin)))
    model = fit_logistic(x, y, c=c, max_iter=5000)
    fitted = {
        "questions": int(len(y)), "course": int(y.sum()), "subject": int((~y).sum()), "c": c,
        "cv_course_flagged": round(float((cv[y] >= threshold).mean()), 4),
        "cv_subject_flagged": round(float((cv[~y] >= threshold).mean()), 4),
    }
    return CourseCheck(model_id, model.weights, model.bias, round(threshold, 4), fitted)
