"""No log line shows a credential, whoever logs it."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from app.redaction import install, redact


@pytest.fixture()
def redacting() -> Iterator[None]:
    before = logging.getLogRecordFactory()
    install()
    install()  # a second call changes nothing
    yield
    logging.setLogRecordFactory(before)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('POST http://user:secret@127.0.0.1:18001/v1/chat/completions "HTTP/1.1 200 OK"',
         'POST http://user:***@127.0.0.1:18001/v1/chat/completions "HTTP/1.1 200 OK"'),
        ("postgresql+psycopg://aula:s3nh%40@db:5432/aula", "postgresql+psycopg://aula:***@db:5432/aula"),
        ("https://sk-abc@llm.example/v1", "https://***@llm.example/v1"),
        ("GET /v1/models?api_key=sk-1&x=2", "GET /v1/models?api_key=***&x=2"),
        ("Authorization: Bearer sk-123", "Authorization: Bearer ***"),
        ("Basic dXNlcjpzZWNyZXQ=", "Basic ***"),
        ("aula ready: 120 segments, LLM embedded", "aula ready: 120 segments, LLM embedded"),
        ("a Basic idea, mail ana@example.com", "a Basic idea, mail ana@example.com"),
    ],
)
def test_credentials_in_text_are_hidden(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_every_log_record_is_redacted_message_and_arguments(
    redacting: None, caplog: pytest.LogCaptureFixture
) -> None:
    class Url:  # httpx logs its URL object, not a string
        def __str__(self) -> str:
            return "http://user:secret@127.0.0.1/v1/chat/completions"

    with caplog.at_level(logging.INFO):
        logging.getLogger("httpx").info('HTTP Request: %s %s "%s %d %s"', "POST", Url(),
                                        "HTTP/1.1", 200, "OK")
        logging.getLogger("aula").warning("LLM at http://u:pw1@h/v1 failed")
        logging.getLogger("aula.access").info('%s - "%s %s HTTP/%s" %d',
                                                 ("127.0.0.1", 5000), "GET", "/health", "1.1",
                                                 200)
    assert "secret" not in caplog.text and "pw1" not in caplog.text
    assert "http://user:***@127.0.0.1/v1/chat/completions" in caplog.text
    assert caplog.records[2].args == (("127.0.0.1", 5000), "GET", "/health", "1.1", 200)
