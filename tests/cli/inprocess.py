"""``aula`` run in the test's own process: the same command objects, options, output and exit
code as ``python -m app.cli``, without starting Python and loading torch again for each call."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from typer.testing import CliRunner


@dataclass(frozen=True)
class Ran:
    """What a finished command left: its exit code and what it printed on each stream."""

    returncode: int
    stdout: str
    stderr: str


@contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    """``env`` set for the command, the settings read afresh, both undone after it."""
    from app.config import get_settings

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    get_settings.cache_clear()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        get_settings.cache_clear()


def run_aula(*args: str, stdin: str | None = None, **env: str) -> Ran:
    """``aula ARGS`` with ``env`` added to the environment and ``stdin`` as its input."""
    from app.cli import cli

    with _environment({"HF_HUB_OFFLINE": "1", **env}):
        result = CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)
    return Ran(result.exit_code, result.stdout, result.stderr)
