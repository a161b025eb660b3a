"""``aula serve`` and ``aula ask``."""

from __future__ import annotations

import logging
from pathlib import Path

import typer

from app.cli.common import IndexOpt, JsonOpt, one_line_errors, print_json, settings_for


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
        s.index_dir  # noqa: B018 - settings validated before the server starts
        uvicorn.run(create_app(s), host=host, port=port, log_level="info")


def ask(
    question: str = typer.Argument(..., help="The question."),
    k: int = typer.Option(10, "-k", help="How many segments to retrieve."),
    lecture: list[str] = typer.Option([], "--lecture", help="Only these lecture ids."),
    index: Path | None = IndexOpt,
    hide_urls: bool = typer.Option(False, "--hide-urls", help="Print URLs as 'oculto'."),
    json_out: bool = JsonOpt,
) -> None:
    """Answer one question and print it as a report record (Markdown), or the /ask JSON."""
    from fastapi.testclient import TestClient

    from app.main import create_app

    s = settings_for(index)
    with one_line_errors(), TestClient(create_app(s)) as client:
        res = client.post("/ask", json={"question": question, "k": k, "lectures": lecture or None})
    body = res.json()
    if res.status_code == 422:
        typer.echo(f"erro: {body.get('detail')}", err=True)
        raise typer.Exit(2)
    if json_out:
        print_json(body)
    else:
        typer.echo(render_answer_markdown(body, hide_urls=hide_urls))
    if body.get("error"):
        typer.echo(f"erro: {body['error']}", err=True)
        raise typer.Exit(1)


def render_answer_markdown(body: dict, *, hide_urls: bool = False) -> str:  # type: ignore[type-arg]
    """The first half of a report record: question, segments, answer, references."""
    from corpus.models import Hit
    from corpus.render import fmt_ts, hit_markdown

    parts = [f"**Pergunta**: {body['question']}", "", "**Segmentos recuperados pelo E5**:"]
    for h in body["segments"]:
        parts += [hit_markdown(Hit(**h), hide_url=hide_urls), ""]
    parts += ["", f"**Resposta gerada pelo LLM**: {body.get('answer') or '—'}", "",
              "**Referências**:"]
    for c in body.get("citations", []):
        if hide_urls:
            parts.append("- [Vídeo de referência oculto]()")
        else:
            label = f"{c['title'] or c['lecture_id']} ({fmt_ts(c['start'])}–{fmt_ts(c['end'])})"
            parts.append(f"- [{label}]({c['url']})")
    return "\n".join(parts)
