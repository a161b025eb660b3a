"""The packages' layering, read from the code: imports run one way, so a batch run needs no
server, the answer path no web layer, and a change to the web layer never touches the core.

corpus (transcripts, segments, vectors, hits) <- eval (judges, metrics, reports)
<- answer (the question's stages) <- app (service, pages, store) <- app.cli (wiring only).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

WEB_OR_CLI = ("app.api", "app.pages", "app.main", "app.cli", "app.deps", "app.recorder")

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "corpus": ("app", "eval", "answer", "bench"),
    "eval": ("app", "answer", "bench"),
    "answer": (*WEB_OR_CLI, "bench"),
}


def imports(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports (absolute names), with its line, lazy imports included."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [(node.lineno, node.module)]
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def _under(name: str, prefixes: tuple[str, ...]) -> str | None:
    return next((p for p in prefixes if name == p or name.startswith(p + ".")), None)


def violations(package: str, forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, name in imports(path):
            hit = _under(name, forbidden)
            if hit is not None:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_lower_layers_do_not_import_higher_ones(package: str) -> None:
    assert violations(package, FORBIDDEN[package]) == []


def test_only_the_cli_imports_the_cli() -> None:
    outside = ("corpus", "eval", "answer", "app", "bench")
    found = [v for p in outside for v in violations(p, ("app.cli",))
             if not v.startswith("app/cli/")]
    assert found == []


def test_the_check_sees_a_bad_import(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from app.api.ask import retrieve\n")
    assert [n for _, n in imports(bad)] == ["app.api.ask", "app.api.ask.retrieve"]
    assert _under("app.api.ask.retrieve", WEB_OR_CLI) == "app.api"


def _modules() -> list[Path]:
    return [p for pkg in ("corpus", "eval", "answer", "app")
            for p in sorted((ROOT / pkg).rglob("*.py"))]


def test_only_the_settings_read_the_environment() -> None:
    """The environment is read (and the process's variables set) in ``app/config.py`` alone:
    every other module takes its settings as an argument."""
    found = [f"{p.relative_to(ROOT)}:{n}" for p in _modules() if p != ROOT / "app" / "config.py"
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if "os.environ" in line or "getenv(" in line]
    assert found == []


LONGEST_FUNCTION = 60


def test_no_function_is_longer_than_a_screen() -> None:
    long = []
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LONGEST_FUNCTION:
                    long.append(f"{p.relative_to(ROOT)}:{node.lineno} {node.name} ({lines})")
    assert long == []
