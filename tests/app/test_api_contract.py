"""The API does what its OpenAPI spec says: schemathesis, with every check, over the real server
on 127.0.0.1 (the fake LLM answers), logged in with an instructor's API token.

Bounded and deterministic: 30 examples an operation, hypothesis derandomized, no database
between runs (a fresh one per module), so a failure replays the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from app.auth import issue_token
from app.config import Settings
from app.db.session import open_database
from app.main import create_app
from app.serving import uvicorn_options
from tests.app.fake_llm import FakeLLMServer
from tests.review.conftest import add_instructor, seed
from tests.servers import ServedApp

EXAMPLES = 30


@pytest.fixture(scope="module")
def served(sample_index, tmp_path_factory) -> Iterator[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(server URL, bearer token) of an app with stored answers and the instructor ``ana``."""
    folder: Path = tmp_path_factory.mktemp("contract-db")
    url = f"sqlite:///{folder}/aula.db"
    with FakeLLMServer() as llm:
        settings = Settings(
            answer_strategy="direct", index_dir=sample_index.root, llm_base_url=llm.base_url,
            llm_model="fake-model", llm_retries=0, llm_timeout=5, database_url=url,
            ask_rate_per_minute=0, database_timeout=5.0,
        )
        db = open_database(url)
        add_instructor(db)
        seed(db, 5)
        token = issue_token(db, "ana")
        with ServedApp(create_app(settings), **uvicorn_options(settings)) as srv:
            yield srv.url, token
        db.close()


# The spec the app publishes at /openapi.json (built without starting anything heavy).
# An import's text is a CSV export or Markdown records, which no JSON schema can describe: a
# text the schema allows may still be rejected, with 422 naming the bad rows. Every other check,
# and this one's other statuses, stay as schemathesis ships them.
CONFIG = schemathesis.Config.from_str('''
[[operations]]
include-path = "/api/review/import"
checks.positive_data_acceptance.expected-statuses = [
    "2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
''')
schema = schemathesis.openapi.from_dict(create_app(Settings()).openapi(), config=CONFIG)


OPERATIONS = [result.ok() for result in schema.get_all_operations()]
"""Every operation of the spec, one test each (named by method and path, so that parallel
runs hand out each one)."""


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.label)
def test_the_api_matches_its_spec(operation: Any, served: tuple[str, str]) -> None:
    url, token = served

    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    def check(case: Any) -> None:
        case.call_and_validate(base_url=url, headers={"Authorization": f"Bearer {token}"})

    check()
