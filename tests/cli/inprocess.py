"""``aula`` run in the test's own process: the same command objects, options, output and exit
code as ``python -m app.cli``, without starting Python and loading torch again for each call."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner


@dataclass(frozen=True)
class Ran:
    """What a finished command left: its exit code and what it printed on each stream."""

    returncode: int
    stdout: str
    stderr: str


@contextmanager
def _environment(env: dict[str, str], cwd: Path | None) -> Iterator[None]:
    """``env`` set for the command, run in ``cwd``, the settings read afresh; all undone after
    it."""
    from app.config import get_settings

    saved = {k: os.environ.get(k) for k in env}
    here = Path.cwd()
    os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    get_settings.cache_clear()
    try:
        yield
    finally:
        os.chdir(here)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        get_settings.cache_clear()


def run_aula(*args: str, stdin: str | None = None, cwd: Path | None = None, **env: str) -> Ran:
    """``aula ARGS`` with ``env`` added to the environment, ``stdin`` as its input, in
    ``cwd``."""
    from app.cli import cli

    with _environment({"HF_HUB_OFFLINE": "1", **env}, cwd):
        result = CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)
    return Ran(result.exit_code, result.stdout, result.stderr)
