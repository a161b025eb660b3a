"""Keeps every answered question in the database and, when a judge is configured, judges it in
the background (AR with chain-of-thought, the study's AR-only C/PC/I label).

Neither may break or slow answering: a failed write is logged and the answer still goes out,
and judging runs on one worker thread behind a bounded queue (when full, new answers stay
unjudged and can be judged later with ``aula review judge``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, Request

from app.config import Settings
from app.db import store
from app.db.session import Database

log = logging.getLogger(__name__)
ChatFn = Callable[[list[dict[str, str]]], str]
JUDGE_MAX_TOKENS = 400


def judge_client(settings: Settings, answer_llm: Any) -> Any:
    """The judge's own endpoint when set, else the answerer's client (or None)."""
    if settings.judge_base_url:
        from app.llm import LLMClient

        return LLMClient(settings.judge_base_url, api_key=settings.judge_api_key,
                         model=settings.judge_model or None, timeout=settings.llm_timeout,
                         retries=settings.llm_retries)
    return answer_llm


def judge_answer(db: Database, client: Any, answer_id: int, question: str, answer: str,
                 contexts: Sequence[str] = ()) -> None:
    """Judge one stored answer and record AR, the automated label and the reasoning.

    With the retrieved segments (``contexts``) and a client that gives first-token
    probabilities, the answer's claims are also checked against them (``eval.claims``) and the
    label combines both judges; otherwise it is the study's AR-only mapping.
    """
    from eval.claims import verify_claims
    from eval.judge import RELEVANCE, judge_item
    from eval.labels import ar_only_label, combined_label

    def chat(messages: list[dict[str, str]]) -> str:
        return str(client.chat(messages, temperature=0.0, max_tokens=JUDGE_MAX_TOKENS))

    model = str(getattr(client, "model_id", "") or "")
    try:
        res = judge_item(chat, RELEVANCE, {"question": question, "answer": answer})
        score, reasoning, error = res.score, res.reasoning or res.raw, res.error
        label = ar_only_label(score)
        if contexts and hasattr(client, "first_token"):
            cr = verify_claims(client.first_token, answer, contexts)
            label = combined_label(score, cr.score) if cr.score is not None else label
            reasoning = f"{reasoning}\n\nCorreção, afirmação por afirmação:\n{cr.reasoning}"
            error = error or cr.error
    except Exception as exc:  # noqa: BLE001 - recorded on the item; judging is best effort
        score, reasoning, error, label = None, None, f"judge failed: {exc}", None
    with db.write() as s:
        store.set_automated(s, answer_id, ar_score=score, label=label,
                            reasoning=reasoning, model=model, error=error,
                            now=datetime.now(UTC))


class BackgroundJudge:
    """One worker thread; at most ``max_pending`` answers wait, the rest are skipped."""

    def __init__(self, db: Database, client: Any, max_pending: int = 100) -> None:
        self.db = db
        self.client = client
        self._slots = threading.BoundedSemaphore(max_pending)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aula-judge")

    def submit(self, answer_id: int, question: str, answer: str,
               contexts: Sequence[str] = ()) -> bool:
        if not self._slots.acquire(blocking=False):
            log.warning("judge queue full: answer %d left unjudged", answer_id)
            return False
        self._pool.submit(self._run, answer_id, question, answer, list(contexts))
        return True

    def _run(self, answer_id: int, question: str, answer: str, contexts: list[str]) -> None:
        try:
            judge_answer(self.db, self.client, answer_id, question, answer, contexts)
        except Exception:
            log.exception("could not judge answer %d", answer_id)
        finally:
            self._slots.release()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class AnswerRecorder:
    """``record(out)`` after each answer; never raises."""

    def __init__(self, db: Database | None, judge: BackgroundJudge | None = None) -> None:
        self.db = db
        self.judge = judge

    @classmethod
    def from_settings(cls, settings: Settings, db: Database | None, llm: Any) -> AnswerRecorder:
        judge = None
        if db is not None and settings.review_judge:
            client = judge_client(settings, llm)
            if client is not None:
                judge = BackgroundJudge(db, client, settings.review_judge_queue)
        return cls(db, judge)

    def record(self, out: Any) -> int | None:
        """Store an answered question (an ``AskOut``); returns its id, None if not stored."""
        if self.db is None or getattr(out, "answer", None) is None:
            return None
        try:
            with self.db.write() as s:
                answer_id = store.save_answer(s, out.model_dump(), datetime.now(UTC))
        except Exception:
            log.exception("could not store an answered question (the answer was still sent)")
            return None
        if self.judge is not None:
            self.judge.submit(answer_id, out.question, out.answer,
                              [seg.text for seg in getattr(out, "segments", None) or []])
        return answer_id

    def close(self) -> None:
        if self.judge is not None:
            self.judge.close()


def get_recorder(request: Request) -> AnswerRecorder:
    rec = getattr(request.app.state, "recorder", None)
    return rec if rec is not None else AnswerRecorder(None)


RecorderDep = Annotated[AnswerRecorder, Depends(get_recorder)]
