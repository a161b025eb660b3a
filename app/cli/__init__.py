"""The ``aula`` command: thin wiring over corpus, app and eval."""

from __future__ import annotations

import typer

from app.cli import corpus_cmds

cli = typer.Typer(
    name="aula",
    help="Aula: perguntas e respostas sobre aulas gravadas, com citações ao segundo.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
corpus_cmds.register(cli)


def _register_optional() -> None:
    """Commands of other layers, added when their modules exist."""
    import importlib

    for name in ("app.cli.serve_cmds", "app.cli.eval_cmds", "app.cli.review_cmds",
                 "app.cli.adapt_cmds"):
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        mod.register(cli)


_register_optional()


def main() -> None:
    from app.config import set_process_env
    from app.redaction import install as redact_logs

    set_process_env()
    redact_logs()  # no log line shows a credential
    cli()
