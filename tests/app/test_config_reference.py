"""The configuration reference matches the settings, and old variables still reach them."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import FLAT_NAMES, Settings
from app.config_reference import COMMAND, reference_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_docs_configuration_is_what_the_code_renders() -> None:
    assert DOC.read_text(encoding="utf-8") == reference_markdown(), (
        f"docs/configuration.md is out of date: run `{COMMAND}`")


def test_every_setting_has_a_description_and_a_flat_name() -> None:
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    places = set(FLAT_NAMES.values())
    for group in type(s).model_fields:
        for name, field in type(getattr(s, group)).model_fields.items():
            assert field.description, f"{group}.{name} has no description"
            assert f"{group}.{name}" in places, f"{group}.{name} has no flat name"


def test_old_variables_reach_their_nested_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("AULA_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AULA_ANSWER_STRATEGY", "quote")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("AULA_LLM_CONTEXT_CHARS", "4000")
    monkeypatch.setenv("AULA_INDEX_DIR", "/tmp/some-index")
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.answer.strategy == "quote"
    assert s.llm.base_url == "http://127.0.0.1:9/v1"
    assert s.llm.context_chars == 4000
    assert s.index.dir == Path("/tmp/some-index")
    assert s.scale.web_concurrency == 3
    monkeypatch.setenv("AULA_QUOTE_CHECKS", "9")
    with pytest.raises(ValueError, match="quote_checks"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_dotenv_file_is_read_below_the_environment(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    env = tmp_path / ".env"
    env.write_text("AULA_SEARCH_MODE=bm25\nAULA_TOP_K=3\n", encoding="utf-8")
    monkeypatch.delenv("AULA_SEARCH_MODE", raising=False)
    monkeypatch.setenv("AULA_TOP_K", "7")
    s = Settings(_env_file=env)  # type: ignore[call-arg]
    assert (s.search.mode, s.search.top_k) == ("bm25", 7)


def test_flat_keywords_still_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AULA_ANSWER_STRATEGY", "quote")
    s = Settings(_env_file=None, answer_strategy="direct", index_dir="x",  # type: ignore[call-arg]
                 llm_timeout=5)
    assert (s.answer.strategy, s.index.dir, s.llm.timeout) == ("direct", Path("x"), 5.0)
    moved = s.model_copy(update={"index_dir": Path("y"), "rerank": "off"})
    assert (moved.index.dir, moved.search.rerank, moved.answer.strategy) == (
        Path("y"), "off", "direct")
    assert s.index.dir == Path("x")
