"""Shared CLI plumbing: settings, one-line errors, loading the embedder and the index."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from app.config import Settings, get_settings

IndexOpt = typer.Option(
    None, "--index", help="Index directory (default: AULA_INDEX_DIR or data/index)."
)
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text.")


def settings_for(index: Path | None) -> Settings:
    s = get_settings()
    if index is not None:
        s = s.model_copy(update={"index_dir": index})
    return s


# The failures a user can cause and fix, each its own type: bad input (a file, an option, a
# setting), a missing or mismatched index, an embedding or reranking model that is not there,
# an LLM endpoint that is down, the embedded model that did not start, a database that cannot
# be reached or is locked. Named by module so that a command that never imported a module (the
# LLM client, SQLAlchemy) does not import it here: its errors cannot have been raised.
_USER_ERRORS = {
    "corpus.errors": ("InputError",),
    "corpus.index": ("IndexStoreError",),
    "corpus.embed": ("EmbeddingModelError",),
    "corpus.rerank": ("RerankModelError",),
    "corpus.vector_store": ("VectorStoreError",),
    "corpus.ray_embed": ("RayUnavailable",),
    "app.llm": ("LLMError",),
    "app.embedded_llm": ("ModelAssemblyError", "EmbeddedLLMError"),
    "app.db.session": ("DatabaseUnavailable",),
}
# SQLAlchemy's errors for a database that is down, locked or refuses the connection.
_DATABASE_ERRORS = ("OperationalError", "InterfaceError", "TimeoutError")


def user_error_types() -> tuple[type[BaseException], ...]:
    """The exception types :func:`one_line_errors` prints as one line."""
    types: list[type[BaseException]] = [OSError, UnicodeDecodeError]
    for module, names in _USER_ERRORS.items():
        if (mod := sys.modules.get(module)) is not None:
            types += [getattr(mod, name) for name in names]
    if (exc_mod := sys.modules.get("sqlalchemy.exc")) is not None:
        types += [getattr(exc_mod, name) for name in _DATABASE_ERRORS]
    return tuple(types)


def _one_line(exc: BaseException) -> str:
    if type(exc).__module__.startswith("sqlalchemy"):
        orig = getattr(exc, "orig", None)
        return f"database unavailable: {orig or exc}".splitlines()[0]
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return " ".join(str(exc).split("\n")) or type(exc).__name__


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Turn the errors a user can fix (:func:`user_error_types`) into one clear line and exit
    code 1. Anything else (a plain ``ValueError`` is a bug) keeps its traceback."""
    import corpus.errors  # noqa: F401 - the base of every input error

    try:
        yield
    except Exception as exc:
        if not isinstance(exc, user_error_types()):
            raise
        typer.echo(f"erro: {_one_line(exc)}", err=True)
        raise typer.Exit(1) from exc


def load_embedder(s: Settings):  # type: ignore[no-untyped-def]
    from app.services import embedder_from_settings

    return embedder_from_settings(s)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()
