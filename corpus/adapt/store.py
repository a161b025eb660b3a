"""Where the adapted model lives: ``INDEX/adapted/`` beside the index's versions."""

from __future__ import annotations

from pathlib import Path

ADAPTED = "adapted"
MODEL = "model"
MANIFEST = "adapted.json"


def adapted_dir(index_root: Path | str) -> Path:
    return Path(index_root) / ADAPTED
