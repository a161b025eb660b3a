"""The configuration reference, rendered from the settings themselves.

``python -m app.config_reference > docs/configuration.md`` writes it; a test fails when the
committed file differs from what the code renders.
"""

from __future__ import annotations

import types
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic_core import PydanticUndefined

from app.config import FLAT_NAMES, GROUPS, env_names

COMMAND = "python -m app.config_reference > docs/configuration.md"


def _type(annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin is Literal:
        return " \\| ".join(f"`{v}`" for v in get_args(annotation))
    if origin in (Union, types.UnionType):
        return " or ".join(_type(a) for a in get_args(annotation))
    if annotation is type(None):
        return "unset"
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return "path"
    if isinstance(annotation, type) and not issubclass(annotation, Enum):
        return {"str": "text", "int": "integer", "float": "number", "bool": "true/false"}.get(
            annotation.__name__, annotation.__name__)
    return str(annotation)


def _default(field: Any) -> str:
    value = field.get_default(call_default_factory=True)
    if value is PydanticUndefined or value is None:
        return "unset"
    if isinstance(value, Path) and value.is_relative_to(Path.home()):
        return f"`~/{value.relative_to(Path.home()).as_posix()}`"
    if value == "":
        return "empty"
    return f"`{str(value).lower() if isinstance(value, bool) else value}`"


def reference_markdown() -> str:
    """Every setting by topic: its variables, type, default and what it does."""
    by_place = {place: flat for flat, place in FLAT_NAMES.items()}
    lines = [
        "# Configuration",
        "",
        "Every setting is read from its environment variable or from a `.env` file in the "
        "working folder (the environment wins). In code each is reached by topic, "
        "`get_settings().answer.strategy` for `AULA_ANSWER_STRATEGY`.",
        "",
        f"Generated from `app/config.py` by `{COMMAND}`; do not edit by hand.",
    ]
    for group, model in GROUPS.items():
        lines += ["", f"## {group}", "", (model.__doc__ or "").strip(), "",
                  "| Variable | Type | Default | Description |", "|---|---|---|---|"]
        for name, field in model.model_fields.items():
            names = " or ".join(f"`{v}`" for v in env_names(by_place[f"{group}.{name}"]))
            about = (field.description or "").replace("|", "\\|")
            lines.append(f"| {names} | {_type(field.annotation)} | {_default(field)} | {about} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reference_markdown(), end="")
