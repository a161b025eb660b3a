"""The one error every reader raises: it names the file and the line or entry."""

from __future__ import annotations

from pathlib import Path


class TranscriptError(ValueError):
    """A transcript that cannot be read, said in one line: ``file: line 14: reason``."""

    def __init__(
        self, path: Path | str, reason: str, *, line: int | None = None, entry: int | None = None
    ) -> None:
        self.path = Path(path)
        self.reason = reason
        self.line = line
        self.entry = entry
        where = (
            f"line {line}: " if line is not None
            else f"entry {entry}: " if entry is not None else ""
        )
        super().__init__(f"{self.path}: {where}{reason}")
