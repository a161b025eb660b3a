"""``aula users add|token|list`` and ``aula review export|import|judge``: instructor accounts
and the stored answers' annotations, on the database of AULA_DATABASE_URL."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import typer

from app.cli.common import JsonOpt, one_line_errors, print_json
from app.config import get_settings
from corpus.errors import InputError

users = typer.Typer(help="Contas de instrutor (alunos perguntam sem conta).",
                    no_args_is_help=True)
review = typer.Typer(help="Respostas guardadas: exportar e importar anotações.",
                     no_args_is_help=True)


def register(cli: typer.Typer) -> None:
    cli.add_typer(users, name="users")
    cli.add_typer(review, name="review")


@contextmanager
def database() -> Iterator[object]:
    """The configured database, migrated; a database that is down is one clear line."""
    from app.db.session import DatabaseUnavailable, open_database

    s = get_settings()
    with one_line_errors():
        db = open_database(s.service.database_url, timeout=s.service.database_timeout,
                           migrate=False)
        try:
            try:
                db.ensure_ready()
            except DatabaseUnavailable as exc:
                raise DatabaseUnavailable(str(exc)) from None
            yield db
        finally:
            db.close()


def _password(from_stdin: bool, prompt: str) -> str:
    """A password: the first line of standard input, or typed twice at ``prompt``."""
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    return str(typer.prompt(prompt, hide_input=True, confirmation_prompt=True))


@users.command("add")
def users_add(
    name: str = typer.Argument(..., help="Login name."),
    role: str = typer.Option("instructor", "--role", help="Only 'instructor' for now."),
    password_stdin: bool = typer.Option(False, "--password-stdin",
                                        help="Read the password from standard input."),
    json_out: bool = JsonOpt,
) -> None:
    """Create a user; the password is hashed with argon2."""
    from app.auth import hash_password, now
    from app.db import store

    password = _password(password_stdin, "Senha")
    with database() as db:
        with one_line_errors():
            try:
                hashed = hash_password(password)
            except ValueError as exc:  # the password rule
                raise InputError(str(exc)) from None
            with db.write() as s:  # type: ignore[attr-defined]
                user = store.add_user(s, name.strip(), role, hashed, now())
    if json_out:
        print_json({"name": user.name, "role": user.role})
    else:
        typer.echo(f"usuário {user.name} criado ({user.role})")


@users.command("token")
def users_token(
    name: str = typer.Argument(...),
    days: float | None = typer.Option(None, "--days", min=0.001,
                                      help="Lifetime in days (default: AULA_TOKEN_DAYS, 90; "
                                           "at most 36500)."),
    json_out: bool = JsonOpt,
) -> None:
    """Print a new API token for NAME (shown once): send it as `Authorization: Bearer ...`.
    It is refused after its lifetime; `aula users revoke` ends it sooner."""
    from app.auth import issue_token, token_expiry

    with one_line_errors():
        expires = token_expiry(days or get_settings().security.token_days)
    with database() as db, one_line_errors():
        token = issue_token(db, name, expires)  # type: ignore[arg-type]
    if json_out:
        print_json({"name": name, "token": token, "expires_at": expires.isoformat()})
    else:
        typer.echo(token)
        typer.echo(f"vale até {expires:%Y-%m-%d %H:%M} UTC", err=True)


@users.command("revoke")
def users_revoke(
    name: str = typer.Argument(...),
    token_stdin: bool = typer.Option(False, "--token-stdin",
                                     help="Revoke only the token read from standard input."),
    json_out: bool = JsonOpt,
) -> None:
    """Revoke NAME's API tokens and end their login sessions (or only one token)."""
    from app.auth import revoke

    token = sys.stdin.readline().strip() if token_stdin else None
    with database() as db, one_line_errors():
        tokens, sessions = revoke(db, name, token)  # type: ignore[arg-type]
        if token is not None and not tokens:
            raise InputError(f"token: not a live token of {name!r}")
    if json_out:
        print_json({"name": name, "tokens": tokens, "sessions": sessions})
    else:
        typer.echo(f"{tokens} tokens revogados, {sessions} sessões encerradas ({name})")


@users.command("remove")
def users_remove(name: str = typer.Argument(...), json_out: bool = JsonOpt) -> None:
    """Delete the account NAME with its sessions and tokens (annotations keep the name)."""
    from app.auth import remove_user

    with database() as db, one_line_errors():
        remove_user(db, name)  # type: ignore[arg-type]
    if json_out:
        print_json({"name": name, "removed": True})
    else:
        typer.echo(f"usuário {name} removido")


@users.command("password")
def users_password(
    name: str = typer.Argument(...),
    password_stdin: bool = typer.Option(False, "--password-stdin",
                                        help="Read the new password from standard input."),
    json_out: bool = JsonOpt,
) -> None:
    """Change NAME's password; every login session of NAME ends (API tokens stay)."""
    from app.auth import change_password

    password = _password(password_stdin, "Nova senha")
    with database() as db, one_line_errors():
        sessions = change_password(db, name, password)  # type: ignore[arg-type]
    if json_out:
        print_json({"name": name, "sessions": sessions})
    else:
        typer.echo(f"senha de {name} trocada, {sessions} sessões encerradas")


@users.command("list")
def users_list(json_out: bool = JsonOpt) -> None:
    """The users and their roles."""
    from app.db import store

    with database() as db, db.read() as s:  # type: ignore[attr-defined]
        found = store.list_users(s)
    if json_out:
        print_json([{"name": u.name, "role": u.role} for u in found])
    else:
        for u in found:
            typer.echo(f"{u.name}\t{u.role}")


@review.command("export")
def review_export(
    out: Path = typer.Option(..., "--out", help="File to write."),
    fmt: str = typer.Option("csv", "--format",
                            help="csv (a question set `aula eval` reads) or md (records)."),
    all_items: bool = typer.Option(False, "--all", help="Also the items not annotated yet."),
    hide_urls: bool = typer.Option(False, "--hide-urls", help="md: URLs as 'oculto'."),
    json_out: bool = JsonOpt,
) -> None:
    """Export the annotated items."""
    from app.db import exchange, store

    if fmt not in ("csv", "md"):
        typer.echo(f"erro: --format: {fmt!r}; use csv or md", err=True)
        raise typer.Exit(1)
    with database() as db, db.read() as s:  # type: ignore[attr-defined]
        rows = store.export_items(s, annotated_only=not all_items)
    text = exchange.to_csv(rows) if fmt == "csv" else exchange.to_records(rows,
                                                                          hide_urls=hide_urls)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    if json_out:
        print_json({"items": len(rows), "format": fmt, "out": str(out)})
    else:
        typer.echo(f"{len(rows)} itens exportados em {out}")


@review.command("import")
def review_import(
    file: Path = typer.Argument(..., help="A CSV export or Markdown records."),
    fmt: str | None = typer.Option(None, "--format", help="csv or md (default: by name)."),
    user: str = typer.Option("import", "--user", help="Recorded as who made the changes."),
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="Replace annotations the file gives no version for."),
    json_out: bool = JsonOpt,
) -> None:
    """Import annotations: every row or none (a bad row names itself; nothing changes)."""
    from app.db import exchange, store

    with one_line_errors():
        with file.open(encoding="utf-8", newline="") as f:  # CSV: the cells' own line ends
            text = f.read()
        kind = fmt or exchange.guess_format(file.name, text)
        if kind not in ("csv", "md"):
            raise InputError(f"--format: {kind!r}; use csv or md")
        try:
            rows = exchange.parse_import(text, kind)  # type: ignore[arg-type]
        except exchange.ImportFormatError as exc:
            raise exchange.ImportFormatError(f"{file}: {exc}") from None
    with database() as db, one_line_errors():
        with db.write() as s:  # type: ignore[attr-defined]
            res = store.import_annotations(s, rows, user=user, now=datetime.now(UTC),
                                           source=f"import-{kind}", overwrite=overwrite)
    if json_out:
        print_json({"changed": res.changed, "unchanged": res.unchanged})
    else:
        typer.echo(f"{res.changed} anotações importadas, {res.unchanged} sem mudança")


@review.command("judge")
def review_judge(
    limit: int = typer.Option(100, "--limit", help="At most this many answers."),
    json_out: bool = JsonOpt,
) -> None:
    """Judge stored answers that were never judged (AR, claims, reasoning, label)."""
    from contextlib import ExitStack

    from app.db import store
    from app.judging import judge_client, judge_pipeline
    from app.recorder import judge_answer

    s = get_settings()
    with database() as db, ExitStack() as stack, one_line_errors():
        pipeline = judge_pipeline(s, judge_client(s, stack=stack))
        with db.read() as sess:  # type: ignore[attr-defined]
            todo = store.unjudged(sess, limit)
        for answer_id, question, answer in todo:
            with db.read() as sess:  # type: ignore[attr-defined]
                segments = store.get_item(sess, answer_id).get("segments") or []
            contexts = [seg["text"] for seg in segments if seg.get("text")]
            judge_answer(db, pipeline, answer_id, question, answer, contexts)  # type: ignore[arg-type]
    if json_out:
        print_json({"judged": len(todo)})
    else:
        typer.echo(f"{len(todo)} respostas avaliadas")
