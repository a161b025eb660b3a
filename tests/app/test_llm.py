"""LLMClient against the fake OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator

import pytest

from app.config import Settings
from app.llm import LLMClient, LLMError, client_from_settings, redacted
from tests.app.fake_llm import MODEL, FakeLLMServer

MESSAGES = [{"role": "user", "content": "O que é uma função de ativação?"}]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(responder=lambda m: "Echo: " + m[-1]["content"]) as srv:
        yield srv


def client(srv: FakeLLMServer, **kw: float) -> LLMClient:
    opts = {"timeout": 5.0, "retries": 2, "backoff": 0.01, **kw}
    return LLMClient(srv.base_url, model="m", **opts)  # type: ignore[arg-type]


def test_chat_returns_the_reply_and_sends_the_request(server: FakeLLMServer) -> None:
    assert client(server).chat(MESSAGES, max_tokens=50) == "Echo: O que é uma função de ativação?"
    req = server.chat_requests[0]
    assert req["model"] == "m"
    assert req["messages"] == MESSAGES
    assert req["max_tokens"] == 50
    assert req["temperature"] == 0.0


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_failures_are_retried_then_succeed(server: FakeLLMServer, status: int) -> None:
    server.fail_next(2, status)
    assert client(server, retries=2).chat(MESSAGES).startswith("Echo:")
    assert len(server.chat_requests) == 3


def test_retries_exhausted_raise_one_error_naming_the_endpoint(server: FakeLLMServer) -> None:
    server.fail_next(5, 500)
    with pytest.raises(LLMError) as err:
        client(server, retries=1).chat(MESSAGES)
    assert server.base_url in str(err.value)
    assert "2 attempt" in str(err.value) and "500" in str(err.value)
    assert len(server.chat_requests) == 2


def test_client_errors_are_not_retried(server: FakeLLMServer) -> None:
    server.fail_next(1, 400)
    with pytest.raises(LLMError, match="400"):
        client(server).chat(MESSAGES)
    assert len(server.chat_requests) == 1


def test_timeouts_are_retried(server: FakeLLMServer) -> None:
    server.slow(1.0)
    with pytest.raises(LLMError, match="timed out"):
        client(server, timeout=0.2, retries=1).chat(MESSAGES)
    server.slow(0)
    assert client(server, timeout=2.0).chat(MESSAGES).startswith("Echo:")


def test_unreachable_endpoint_raises_llm_error() -> None:
    with FakeLLMServer() as srv:
        url = srv.base_url
    dead = LLMClient(url, model="m", timeout=1.0, retries=1, backoff=0.01)
    with pytest.raises(LLMError, match="cannot connect") as err:
        dead.chat(MESSAGES)
    assert url in str(err.value)


def test_stream_yields_deltas_that_join_into_the_reply(server: FakeLLMServer) -> None:
    deltas = list(client(server).stream(MESSAGES))
    assert len(deltas) > 3
    assert "".join(deltas) == "Echo: O que é uma função de ativação?"
    assert server.chat_requests[0]["stream"] is True


def test_stream_retries_before_the_first_delta(server: FakeLLMServer) -> None:
    server.fail_next(1, 503)
    assert "".join(client(server).stream(MESSAGES)).startswith("Echo:")
    server.fail_next(3, 503)
    with pytest.raises(LLMError, match=server.base_url):
        list(client(server).stream(MESSAGES))


def test_model_id_is_asked_of_the_server_when_not_configured(server: FakeLLMServer) -> None:
    llm = LLMClient(server.base_url, timeout=5.0)
    assert llm.model_id == MODEL
    llm.chat(MESSAGES)
    assert server.chat_requests[0]["model"] == MODEL


def test_client_from_settings(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("AULA_LLM_BASE_URL", "OPENAI_BASE_URL", "AULA_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AULA_LLM_BASE_URL", server.base_url)
    settings = Settings(_env_file=None, llm_model="x", llm_retries=0)  # type: ignore[call-arg]
    llm = client_from_settings(settings)
    assert (llm.base_url, llm.model_id, llm.retries) == (server.base_url, "x", 0)

    monkeypatch.delenv("AULA_LLM_BASE_URL")
    bare = Settings(_env_file=None)  # type: ignore[call-arg]
    other = client_from_settings(bare, server.base_url, model="local")
    assert other.chat(MESSAGES).startswith("Echo:")
    assert other.model_id == "local"
    with pytest.raises(LLMError, match="no LLM endpoint"):
        client_from_settings(bare)


def test_first_token_asks_one_token_with_logprobs_and_returns_probabilities(
    server: FakeLLMServer,
) -> None:
    text, probs = client(server).first_token(MESSAGES, top=5)
    assert text.startswith("Echo:")
    assert probs == pytest.approx({"Echo:": 0.9, "?": 0.1})
    req = server.chat_requests[0]
    assert req["max_tokens"] == 1 and req["logprobs"] is True and req["top_logprobs"] == 5
    assert req["temperature"] == 0.0


def test_a_deciding_yes_no_is_read_past_the_embedded_servers_prompt_cache_and_once(
    server: FakeLLMServer,
) -> None:
    embedded = LLMClient(server.base_url, model="m", timeout=5.0, fresh_reads=True)
    first = embedded.first_token(MESSAGES, fresh=True)
    assert server.chat_requests[-1]["cache_prompt"] is False
    other = [{"role": "user", "content": "E a sigmoide?"}]
    embedded.first_token(other, fresh=True)
    assert embedded.first_token(MESSAGES, fresh=True) == first  # the same reply, not asked again
    assert len(server.chat_requests) == 2
    # checks that share a passage keep the cache, and so does every read of another endpoint
    embedded.first_token(MESSAGES)
    client(server).first_token(MESSAGES, fresh=True)
    assert [("cache_prompt" in r) for r in server.chat_requests] == [True, True, False, False]
    assert len(server.chat_requests) == 4
    embedded.forget_reads()  # forgotten: read again, past the cache
    assert embedded.first_token(MESSAGES, fresh=True) == first
    assert len(server.chat_requests) == 5 and server.chat_requests[-1]["cache_prompt"] is False


def _with_credentials(srv: FakeLLMServer) -> str:
    return srv.base_url.replace("http://", "http://user:secret@")


def test_the_api_key_is_the_bearer_and_url_credentials_never_reach_the_log(
    server: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        llm = LLMClient(_with_credentials(server), api_key="sk-chave", model="m", retries=0)
        assert llm.chat(MESSAGES).startswith("Echo:")
    assert server.headers[-1]["authorization"] == "Bearer sk-chave"
    assert "HTTP Request: POST" in caplog.text  # httpx's request line is there ...
    assert "secret" not in caplog.text and "sk-chave" not in caplog.text  # ... with no secret
    assert "secret" not in llm.base_url and llm.shown_url.startswith("http://user:***@")


def test_url_credentials_without_a_key_go_in_the_header(server: FakeLLMServer,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        assert LLMClient(_with_credentials(server), model="m").chat(MESSAGES)
    sent = server.headers[-1]["authorization"]
    assert sent == "Basic " + base64.b64encode(b"user:secret").decode()
    assert "secret" not in caplog.text


def test_a_password_in_a_url_is_hidden_in_the_log_line() -> None:
    assert redacted("https://user:p%40ss@llm.example/v1?key=k") == "https://user:***@llm.example/v1"
    assert redacted("https://sk-token@llm.example/v1") == "https://***@llm.example/v1"
