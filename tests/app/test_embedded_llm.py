"""Assembling the GGUF from its parts, and (slow) the real embedded llama.cpp server."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from app.embedded_llm import EmbeddedLLM, EmbeddedLLMError, ModelAssemblyError, assemble_gguf

PIECES = [b"GGUF" + b"a" * 96, b"b" * 100, b"c" * 37]
WHOLE = b"".join(PIECES)
SHA = hashlib.sha256(WHOLE).hexdigest()


def write_parts(folder: Path, pieces: list[bytes] = PIECES) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, data in enumerate(pieces, start=1):
        path = folder / f"part{i:02d}.bin"
        path.write_bytes(data)
        paths.append(path)
    return paths


def assemble(tmp_path: Path, parts: list[Path], sha: str = SHA) -> Path:
    cache = tmp_path / "cache"
    return assemble_gguf(cache, parts=parts, size=len(WHOLE), sha256=sha, name="m.gguf")


def test_parts_are_joined_once_and_verified(tmp_path: Path) -> None:
    parts = write_parts(tmp_path / "parts")
    path = assemble(tmp_path, parts)
    assert path == tmp_path / "cache" / "models" / "m.gguf"
    assert path.read_bytes() == WHOLE
    mtime = path.stat().st_mtime_ns
    for p in parts:  # a verified file is reused: the parts are not read again
        p.unlink()
    assert assemble(tmp_path, parts) == path
    assert path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in path.parent.iterdir()) == ["m.gguf", "m.gguf.verified"]


def test_missing_part_is_named(tmp_path: Path) -> None:
    parts = write_parts(tmp_path / "parts")
    parts[1].unlink()
    with pytest.raises(ModelAssemblyError, match=r"part 2 of 3 is missing"):
        assemble(tmp_path, parts)
    assert not (tmp_path / "cache" / "models" / "m.gguf").exists()


def test_truncated_part_is_caught_before_copying(tmp_path: Path) -> None:
    parts = write_parts(tmp_path / "parts", [PIECES[0], PIECES[1][:-1], PIECES[2]])
    with pytest.raises(ModelAssemblyError, match="add up to"):
        assemble(tmp_path, parts)


def test_corrupt_part_fails_the_checksum_and_leaves_nothing(tmp_path: Path) -> None:
    parts = write_parts(tmp_path / "parts", [PIECES[0], b"X" * 100, PIECES[2]])
    with pytest.raises(ModelAssemblyError, match="sha256"):
        assemble(tmp_path, parts)
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_a_damaged_cached_file_is_rebuilt(tmp_path: Path) -> None:
    parts = write_parts(tmp_path / "parts")
    path = assemble(tmp_path, parts)
    path.write_bytes(b"Z" * len(WHOLE))  # same size, new mtime: the stamp no longer matches
    os.utime(path, ns=(1, 1))
    assert assemble(tmp_path, parts).read_bytes() == WHOLE


def test_start_fails_clearly_without_a_model(tmp_path: Path) -> None:
    with pytest.raises(EmbeddedLLMError, match="model file not found"):
        EmbeddedLLM(tmp_path / "none.gguf").start()


@pytest.mark.slow
def test_embedded_server_answers_in_portuguese() -> None:
    from answer.direct import answer
    from app.config import get_settings
    from app.llm import LLMClient, LLMError
    from corpus.models import Hit

    path = assemble_gguf(get_settings().service.cache_dir)
    hits = [
        Hit(1, 0.9, "redes", "Redes neurais", "", 600, 720,
            "hoje a função de ativação mais usada nas camadas escondidas é a ReLU, a unidade "
            "linear retificada, porque ela é barata de calcular e não satura para valores "
            "positivos, então o gradiente não some como acontece com a sigmoide"),
    ]
    with EmbeddedLLM(path, threads=get_settings().llm.threads or 2) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        llm = LLMClient(server.base_url, model=server.model_id, timeout=300.0)
        result = answer("Qual função de ativação é mais usada hoje e por quê?", hits, llm,
                        max_tokens=160)
        port = server.port
    assert result.covered and result.language == "pt"
    low = result.text.lower()
    assert "relu" in low
    assert any(w in low for w in ("gradiente", "satura", "barata", "positivos"))
    with pytest.raises(LLMError, match="cannot connect"):  # stopped: nothing listens any more
        LLMClient(f"http://127.0.0.1:{port}/v1", model="x", timeout=2.0, retries=0).chat(
            [{"role": "user", "content": "oi"}]
        )


@pytest.mark.slow
def test_a_yes_no_read_fresh_does_not_move_with_what_the_server_read_before() -> None:
    from answer.evidence import gate_messages
    from app.config import get_settings
    from app.llm import LLMClient
    from eval.claims import yes_probability

    asked = gate_messages("por que a ReLU é mais usada que a sigmoide?",
                          "a ReLU não satura para valores positivos, então o gradiente não some "
                          "como acontece com a sigmoide, e ela é barata de calcular")
    before = gate_messages("o que é um autovetor?",
                           "um autovetor é um vetor que fica na sua própria reta depois da "
                           "transformação, só esticado ou encolhido pelo seu autovalor")
    path = assemble_gguf(get_settings().service.cache_dir)
    with EmbeddedLLM(path, threads=get_settings().llm.threads or 2) as server:
        def p(messages: list[dict[str, str]], *, after: list[dict[str, str]] | None = None,
              fresh: bool) -> float | None:
            llm = LLMClient(server.base_url, model=server.model_id, timeout=300.0,
                            fresh_reads=True)  # a new client: nothing kept from another
            if after is not None:
                llm.first_token(after, fresh=fresh)
            return yes_probability(*llm.first_token(messages, fresh=fresh))

        alone = p(asked, fresh=True)
        assert alone is not None
        assert p(asked, after=before, fresh=True) == pytest.approx(alone, abs=1e-6)
        assert p(asked, fresh=True) == pytest.approx(alone, abs=1e-6)
