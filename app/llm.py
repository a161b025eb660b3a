"""The LLM client: any OpenAI-compatible chat endpoint, with our own bounded retries.

The official ``openai`` client does the HTTP; its built-in retries are off (``max_retries=0``)
so that one policy applies everywhere: connection errors, timeouts, 429 and 5xx are retried
with exponential backoff, then one ``LLMError`` names the endpoint and the last error. Its
``public`` line says the same without the endpoint, a key or an address, for anonymous replies.

Credentials never travel in the URL: the configured API key is the bearer, and a
``user:password@`` in the endpoint's URL is taken out of it and sent in the ``Authorization``
header (HTTP Basic) when no key is configured, so no request line or log shows it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

import openai

from corpus.kept import Kept

if TYPE_CHECKING:
    from app.config import Settings

Message = dict[str, str]
T = TypeVar("T")

MAX_BACKOFF_S = 8.0


class LLMError(RuntimeError):
    """The LLM endpoint failed for good (after retries, or with an error retrying can't fix).

    ``str()`` is the detail for the logs (the endpoint, its password hidden, and the server's
    message); ``public`` says what went wrong naming no endpoint, key or address.
    """

    def __init__(self, detail: str, public: str = "the language model failed") -> None:
        super().__init__(detail)
        self.public = public


def redacted(url: str) -> str:
    """``url`` fit for a log: a password in it becomes ``***`` (so does a user name with no
    password: it is often a token) and its query is dropped."""
    parts = urlsplit(url)
    if not parts.netloc:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}:***@{host}" if ":" in user else f"***@{host}"
    return urlunsplit(parts._replace(netloc=netloc, query="", fragment=""))


def without_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@`` part, and that part as the value of an HTTP
    Basic ``Authorization`` header (None when the URL holds no credentials)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    pair = f"{unquote(user)}:{unquote(password)}".encode()
    return (urlunsplit(parts._replace(netloc=host)),
            "Basic " + base64.b64encode(pair).decode("ascii"))


class ChatModel(Protocol):
    """What the answerer needs from an LLM; ``LLMClient`` is the real one."""

    @property
    def model_id(self) -> str: ...

    def chat(
        self, messages: Sequence[Message], *, temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> str: ...

    def stream(
        self, messages: Sequence[Message], *, temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Iterator[str]: ...


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


def _brief(exc: Exception) -> str:
    """What went wrong in words that carry nothing from the endpoint or the network."""
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}"
    if isinstance(exc, openai.APIConnectionError):
        return "cannot connect"
    return type(exc).__name__


def _describe(exc: Exception) -> str:
    """``_brief`` with the detail the logs keep (the server's message, the network cause)."""
    brief = _brief(exc)
    if isinstance(exc, openai.APIStatusError):
        return f"{brief}: {exc.message}"
    if isinstance(exc, openai.APIConnectionError) and exc.__cause__:
        return f"{brief} ({exc.__cause__})"
    if not isinstance(exc, openai.APIError):
        return f"{brief}: {exc}"
    return brief


FRESH_READS_KEPT = 4096
"""Yes/no replies an ``LLMClient`` with ``fresh_reads`` keeps, by their prompt's sha256 (under a
megabyte)."""


class LLMClient:
    """Chat with one model at one OpenAI-compatible endpoint.

    ``model=None`` asks the endpoint (``GET /models``) on first use and takes the first model it
    lists, which suits single-model servers such as llama.cpp's.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        model: str | None = None,
        *,
        timeout: float = 120.0,
        retries: int = 2,
        backoff: float = 0.5,
        fresh_reads: bool = False,
    ) -> None:
        self._spec: dict[str, Any] = {"base_url": base_url, "api_key": api_key,
                                      "timeout": timeout, "retries": retries,
                                      "backoff": backoff, "fresh_reads": fresh_reads}
        self.fresh_reads = fresh_reads
        """A llama.cpp server: ``first_token(fresh=True)`` reads its prompt past the prompt
        cache, once."""
        self._read: Kept[str, tuple[str, dict[str, float] | None]] = Kept(FRESH_READS_KEPT)
        self.base_url, basic = without_credentials(base_url.rstrip("/"))
        self.shown_url = redacted(base_url.rstrip("/"))
        self.retries = max(0, retries)
        self.backoff = backoff
        self._model = model or None
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or "not-needed",
            timeout=timeout,
            max_retries=0,
            # the URL's credentials when no key is configured (the key wins: one header)
            default_headers={"Authorization": basic} if basic and not api_key else None,
        )

    def spec(self) -> dict[str, Any]:
        """The arguments that build this client again elsewhere (a Ray worker): it holds the
        key, so it is never logged."""
        return {**self._spec, "model": self.model_id}

    @property
    def model_id(self) -> str:
        """The model name sent with each request."""
        if self._model is None:
            try:
                models = self._call(lambda: list(self._client.models.list()))
            except LLMError:
                models = []
            self._model = models[0].id if models else "default"
        return self._model

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> str:
        """The assistant's whole reply to ``messages``."""
        kwargs = self._kwargs(messages, temperature, max_tokens)
        resp = self._call(lambda: self._client.chat.completions.create(**kwargs))
        if not resp.choices:
            raise LLMError(f"LLM endpoint {self.shown_url} returned no choices",
                           "the language model returned no choices")
        return resp.choices[0].message.content or ""

    def first_token(self, messages: Sequence[Message], *, top: int = 10, fresh: bool = False
                    ) -> tuple[str, dict[str, float] | None]:
        """A one-token reply at temperature 0 and the probabilities of its ``top`` likeliest
        first tokens (None when the endpoint returns no logprobs): for yes/no judges.

        ``fresh``, on a client with ``fresh_reads`` (the embedded llama.cpp server): the prompt
        is read whole, not from the part a slot has cached (``cache_prompt`` off), and its reply
        kept (the last ``FRESH_READS_KEPT``) and returned again. llama.cpp's numbers for a
        prompt read in two pieces differ from those read in one, by up to 0.04 in P, so a
        yes/no that decides what a student is shown moved with whatever the slot had read
        before it. Checks that read one passage after another keep the cache (the claims
        after the same evidence); elsewhere ``fresh`` changes nothing."""
        if not (fresh and self.fresh_reads):
            return self._first_token(messages, top, fresh=False)
        key = hashlib.sha256(json.dumps([self.model_id, top, list(messages)],
                                        ensure_ascii=False).encode()).hexdigest()
        got = self._read.get(key)
        if got is None:
            got = self._first_token(messages, top, fresh=True)
            self._read.put(key, got)
        return got

    def forget_reads(self) -> None:
        """Forget the yes/no replies kept by ``first_token(fresh=True)``: the next read of each
        asks the server again (a bench timing two strategies on one question)."""
        self._read.clear()

    def _first_token(self, messages: Sequence[Message], top: int, *, fresh: bool
                     ) -> tuple[str, dict[str, float] | None]:
        kwargs = self._kwargs(messages, 0.0, 1)
        kwargs.update(logprobs=True, top_logprobs=top)
        if fresh:
            kwargs["extra_body"] = {"cache_prompt": False}
        resp = self._call(lambda: self._client.chat.completions.create(**kwargs))
        if not resp.choices:
            raise LLMError(f"LLM endpoint {self.shown_url} returned no choices",
                           "the language model returned no choices")
        choice = resp.choices[0]
        text = choice.message.content or ""
        content = choice.logprobs.content if choice.logprobs else None
        if not content or not content[0].top_logprobs:
            return text, None
        probs: dict[str, float] = {}
        for alt in content[0].top_logprobs:
            probs[alt.token] = probs.get(alt.token, 0.0) + math.exp(alt.logprob)
        return text, probs

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Iterator[str]:
        """The reply as text deltas, as the server writes them.

        Opening the stream is retried like ``chat``; a failure after text has been yielded
        raises ``LLMError`` at once, since retrying would repeat what the caller already has.
        """
        kwargs = self._kwargs(messages, temperature, max_tokens)
        chunks = self._call(
            lambda: self._client.chat.completions.create(stream=True, **kwargs)
        )
        try:
            for chunk in chunks:
                if chunk.choices and chunk.choices[0].delta.content:
                    yield chunk.choices[0].delta.content
        except openai.OpenAIError as exc:
            raise LLMError(
                f"LLM endpoint {self.shown_url} failed while streaming: {_describe(exc)}",
                f"the language model failed while streaming ({_brief(exc)})",
            ) from exc
        finally:
            chunks.close()

    def _kwargs(
        self, messages: Sequence[Message], temperature: float, max_tokens: int | None
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model_id,
            "messages": list(messages),
            "temperature": temperature,
        }
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        return kwargs

    def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn``, retrying transient failures with exponential backoff."""
        attempts = self.retries + 1
        for attempt in range(attempts):
            try:
                return fn()
            except openai.OpenAIError as exc:
                if not _retryable(exc):
                    raise LLMError(
                        f"LLM endpoint {self.shown_url} refused the request: {_describe(exc)}",
                        f"the language model refused the request ({_brief(exc)})",
                    ) from exc
                if attempt + 1 == attempts:
                    raise LLMError(
                        f"LLM endpoint {self.shown_url} failed after {attempts} attempt(s); "
                        f"last error: {_describe(exc)}",
                        f"the language model failed after {attempts} attempt(s) "
                        f"({_brief(exc)})",
                    ) from exc
                time.sleep(self._delay(attempt, exc))
        raise AssertionError("unreachable")

    def _delay(self, attempt: int, exc: Exception) -> float:
        delay: float = self.backoff * 2.0**attempt
        if isinstance(exc, openai.RateLimitError):
            retry_after = exc.response.headers.get("retry-after", "")
            try:
                delay = max(delay, float(retry_after))
            except ValueError:
                pass
        return min(delay, MAX_BACKOFF_S)


EMBEDDED_MIN_TIMEOUT_S = 300.0
"""The least seconds one call to the embedded model may take: on a CPU it reads a long prompt
slowly."""


def client_from_settings(
    settings: Settings, base_url_override: str | None = None, *, model: str | None = None,
    judge: bool = False, default_model: str | None = None, min_timeout_s: float = 0.0,
    fresh_reads: bool = False,
) -> LLMClient:
    """The one way a client is built from the settings: the answerer's endpoint
    (``AULA_LLM_*``), or with ``judge`` the judge's (``AULA_JUDGE_*``). ``base_url_override``
    points it elsewhere (the embedded server), without the endpoint's key, and ``model`` (or the
    server's own list) names the model; else ``model``, the endpoint's model, ``default_model``
    (None: the server's own list), the first set. Timeout and retries are ``AULA_LLM_TIMEOUT``
    (at least ``min_timeout_s``) and ``AULA_LLM_RETRIES`` for both endpoints; ``fresh_reads``
    for a llama.cpp server whose yes/no must not depend on its prompt cache (the embedded one)."""
    endpoint = settings.judge if judge else settings.llm
    base_url = base_url_override or endpoint.base_url
    if not base_url:
        raise LLMError("no LLM endpoint configured (set AULA_LLM_BASE_URL or OPENAI_BASE_URL)")
    return LLMClient(
        base_url,
        api_key=None if base_url_override else endpoint.api_key,
        model=model if base_url_override else (model or endpoint.model or default_model),
        timeout=max(settings.llm.timeout, min_timeout_s),
        retries=settings.llm.retries,
        fresh_reads=fresh_reads,
    )
