"""JSON Lines files that users hand us (question sets, labelled sets): one object a line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpus.errors import InputError


def read_objects(path: Path | str, error: type[InputError] = InputError
                 ) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each line of ``path`` that is not blank. A line that is
    not JSON, or not a JSON object, raises ``error`` naming the file and the line."""
    text = Path(path).read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{path}: line {number}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise error(f"{path}: line {number}: expected a JSON object, not "
                        f"{type(row).__name__}")
        yield number, row
