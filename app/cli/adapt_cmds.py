"""``aula adapt``: a relevance model adapted to the course's own lectures."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import typer

from app.adapting import QUESTIONS, course_passages, sentence_questions, train_and_read
from app.cli.common import IndexOpt, JsonOpt, one_line_errors, print_json, settings_for
from corpus.adapt.train import GAP


def register(cli: typer.Typer) -> None:
    cli.command()(adapt)


def adapt(
    index: Path | None = IndexOpt,
    questions: int = typer.Option(
        QUESTIONS, "--questions", min=0,
        help="Passages to have a question for (the LLM's questions already written are kept: "
        "a rerun resumes, a larger number adds more)."),
    train: bool = typer.Option(True, "--train/--no-train",
                               help="Fine-tune the model after writing the questions."),
    epochs: int = typer.Option(1, "--epochs", min=1, help="Passes over the questions."),
    seed: int = typer.Option(0, "--seed", help="Order of the passages and of training."),
    negative_gap: float = typer.Option(
        GAP, "--negative-gap", min=0, metavar="SECONDS",
        help="Seconds kept between a negative from the same lecture and the question's "
        "passage (its neighbours often go on with the same explanation)."),
    from_sentences: bool = typer.Option(
        False, "--from-sentences",
        help="Train on each passage's most specific sentence, taken out of it, instead of "
        "questions the LLM writes: no LLM, minutes instead of hours on 2 cores; the evidence "
        "gate reads such a model as well (search's rerank was measured with the LLM's only)."),
    ray: str | None = typer.Option(
        None, "--ray", metavar="ADDRESS",
        help="Write questions on Ray workers: 'local', 'auto' or ray://HEAD:10001."),
    ray_workers: int = typer.Option(2, "--ray-workers", min=1,
                                    help="Questions written at once on Ray."),
    json_out: bool = JsonOpt,
) -> None:
    """Adapt search to this course: the LLM writes student-style questions for passages of the
    index (INDEX/adapted/questions.jsonl, resumable), or with --from-sentences each passage's
    most specific sentence stands for one; hard negatives are mined from the same lecture and
    from lectures on the same subject, and the E5 model is fine-tuned on them into
    INDEX/adapted/, which the evidence gate then reads (unless AULA_GATE_FILE names another)
    and search reranks its first hits with when AULA_RERANK=adapted."""
    s = settings_for(index)
    with one_line_errors():
        from corpus.errors import InputError

        if from_sentences and ray:
            raise InputError("--ray writes the LLM's questions; --from-sentences asks none")

        data, candidates = course_passages(s, seed)
        if from_sentences:
            result, asked = sentence_questions(candidates, questions)
        else:
            result, asked = _llm_questions(s, data, candidates, questions, ray, ray_workers,
                                           progress=not json_out)
        if train:
            result.update(train_and_read(s, data, asked, epochs=epochs, seed=seed,
                                         gap=negative_gap, progress=not json_out))
    if json_out:
        print_json(result)
    else:
        _echo(result)


def _llm_questions(s: Any, data: Any, candidates: list[Any], target: int, ray: str | None,
                   ray_workers: int, *, progress: bool) -> tuple[dict[str, Any], list[Any]]:
    """The questions the LLM wrote for the first ``target`` passages, those missing written
    now (``INDEX/adapted/questions.jsonl``); what was done."""
    from corpus.adapt.questions import QUESTIONS_FILE, QuestionCache, todo
    from corpus.adapt.store import adapted_dir

    cache = QuestionCache(adapted_dir(s.index.dir) / QUESTIONS_FILE)
    ask_for = todo(cache, candidates, target)
    written = (_write_questions(s, data, cache, ask_for, ray, ray_workers, progress=progress)
               if ask_for else 0)
    asked = cache.questions()
    return {"from_sentences": False, "questions_file": str(cache.path),
            "passages": len(candidates),
            "questions_written_now": written, "questions": len(asked)}, asked


def _echo(result: dict[str, Any]) -> None:
    if "questions_file" in result:
        typer.echo(f"{result['questions']} questions over {result['passages']} passages "
                   f"({result['questions_written_now']} written now): "
                   f"{result['questions_file']}")
    else:
        typer.echo(f"{result['questions']} questions from the sentences of "
                   f"{result['passages']} passages")
    if "model_dir" in result:
        typer.echo(f"adapted model: {result['model_dir']} (held-out generated questions, "
                   f"passage first: {result['before_hit@1']:.3f} -> "
                   f"{result['after_hit@1']:.3f})")


def _write_questions(s: Any, data: Any, cache: Any, ask_for: list[Any], ray: str | None,
                     ray_workers: int, *, progress: bool) -> int:
    from app.services import build_llm
    from corpus.adapt.questions import chat_asker, generate
    from corpus.language import corpus_language

    lang = corpus_language([p.text for p in ask_for])
    with ExitStack() as stack:
        llm, _ = build_llm(s, stack)
        if ray:
            from app.ray_adapt import generate_on_ray

            return generate_on_ray(cache, ask_for, llm, lang, address=ray, workers=ray_workers,
                                   progress=progress)
        return generate(cache, ask_for, chat_asker(llm, lang), llm.model_id, progress=progress)
