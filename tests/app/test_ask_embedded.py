"""(slow) ``aula ask`` end to end on the embedded LLM: no key, no endpoint, no internet."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_aula_ask_answers_from_the_sample_lectures(sample_index) -> None:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AULA_LLM", "OPENAI_"))}
    env.update(AULA_INDEX_DIR=str(sample_index.root), HF_HUB_OFFLINE="1")
    res = subprocess.run(
        [sys.executable, "-m", "app.cli", "ask", "Qual a derivada de x ao quadrado?", "-k", "3",
         "--json"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=900,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    body = json.loads(res.stdout)
    assert body["models"]["llm"].startswith("qwen2.5")
    assert body["covered"] is True
    assert "2x" in body["answer"].replace(" ", "").lower() or "dois" in body["answer"].lower()
    assert body["citations"] and body["citations"][0]["lecture_id"] == "derivadas"
    assert body["timings"]["total"] > body["timings"]["search"]
