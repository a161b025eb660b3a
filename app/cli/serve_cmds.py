"""``aula serve`` and ``aula ask``."""

from __future__ import annotations

import logging
from pathlib import Path

import typer
from pydantic import ValidationError

from app.cli.common import IndexOpt, JsonOpt, one_line_errors, print_json, settings_for
from app.config import Settings


def register(cli: typer.Typer) -> None:
    cli.command()(serve)
    cli.command()(ask)


def serve(
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port"),
    index: Path | None = IndexOpt,
) -> None:
    """Run the HTTP service and the student page (the embedded LLM unless
    AULA_LLM_BASE_URL or OPENAI_BASE_URL names an endpoint)."""
    import uvicorn

    from app.main import create_app

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    s = settings_for(index)
    with one_line_errors():
        s.index.dir  # noqa: B018 - settings validated before the server starts
        from app.serving import uvicorn_options

        uvicorn.run(create_app(s), host=host, port=port, log_level="info",
                    **uvicorn_options(s))  # proxies from AULA_TRUSTED_PROXIES; long heads


def ask(
    question: str = typer.Argument(..., help="The question."),
    k: int = typer.Option(10, "-k", help="How many segments to retrieve."),
    lecture: list[str] = typer.Option([], "--lecture", help="Only these lecture ids."),
    index: Path | None = IndexOpt,
    hide_urls: bool = typer.Option(False, "--hide-urls", help="Print URLs as 'oculto'."),
    strategy: str | None = typer.Option(
        None, "--strategy",
        help="auto (quote on the embedded model, gated on an endpoint), gated (evidence check "
             "first, then a generated answer), quote (the lecture's own words, quoted) or "
             "direct (AULA_ANSWER_STRATEGY)."),
    save: bool = typer.Option(
        False, "--save", help="Store the answer in the review queue (AULA_DATABASE_URL)."),
    json_out: bool = JsonOpt,
) -> None:
    """Answer one question and print it as a report record (Markdown, readable back by
    `aula report`'s parser), or the /ask JSON. Stores nothing unless --save."""
    import time

    from answer.pipeline import Pipeline
    from app.schemas import AskIn, ask_out
    from app.services import build_services

    s = settings_for(index)
    if strategy is not None:
        if strategy not in ("auto", "gated", "direct", "quote"):
            typer.echo("erro: --strategy must be auto, gated, quote or direct", err=True)
            raise typer.Exit(2)
        s = s.model_copy(update={"answer_strategy": strategy})
    try:
        body = AskIn(question=question, k=k, lectures=lecture or None)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "question"
        why = str(first["msg"]).removeprefix("Value error, ")  # pydantic's prefix says nothing
        typer.echo(f"erro: {field}: {why}", err=True)
        raise typer.Exit(2) from exc
    with one_line_errors():
        services = build_services(s)
        with services.stack:
            t0 = time.perf_counter()
            found = services.find(body.question, body.k, body.lectures)
            pipeline = services.pipeline or Pipeline.from_settings(s, services.llm)
            reply = pipeline.reply_to(found)
            timings = dict(found.timings)
            timings.update({f"llm_{k}": v for k, v in reply.timings.items()})
            timings["total"] = time.perf_counter() - t0
            out = ask_out(found, reply, timings, services.models())
        if save and (out.answer is not None):
            typer.echo(f"guardada para revisão: #{_saved(s, out.model_dump())}", err=True)
    data = out.model_dump()
    if json_out:
        print_json(data)
    else:
        typer.echo(render_answer_markdown(data, hide_urls=hide_urls))
    if data.get("error"):
        typer.echo(f"erro: {data['error']}", err=True)
        raise typer.Exit(1)


def _saved(s: Settings, body: dict) -> int:  # type: ignore[type-arg]
    """Store an answer in the review queue; its id."""
    from datetime import UTC, datetime

    from app.db import store
    from app.db.session import open_database

    db = open_database(s.service.database_url, timeout=s.service.database_timeout)
    try:
        with db.write() as session:
            return int(store.save_answer(session, body, datetime.now(UTC)))
    finally:
        db.close()


def render_answer_markdown(body: dict, *, hide_urls: bool = False) -> str:  # type: ignore[type-arg]
    """A report record (the reference's shape, parsed back by ``eval.record.parse_records``):
    question, segments, answer, references; a reply without an answer prints its note. A reply
    that cites nothing (a decline, the LLM down) lists as its references the moments its text
    points to ("os momentos mais próximos estão abaixo")."""
    from corpus.models import Hit
    from corpus.render import fmt_ts
    from eval.record import Record, Reference, reference_titles, render_record

    shown = body.get("citations") or body.get("moments") or []
    labels = reference_titles(
        [f"{c['title'] or c['lecture_id']} ({fmt_ts(c['start'])}–{fmt_ts(c['end'])})"
         for c in shown], [c.get("n") or [] for c in shown])
    refs = [Reference(label, c["url"], c["start"], c["end"])
            for label, c in zip(labels, shown, strict=True)]
    answer = body.get("answer") or body.get("note") or ""
    rec = Record("1", body["question"], [Hit(**h) for h in body["segments"]], answer, refs)
    return render_record(rec, hide_urls=hide_urls).rstrip()
