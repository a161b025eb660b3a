"""Keeps every answered question in the database and, when a judge is configured, judges it in
the background with the batch evaluation's own pipeline (``app.judging``: AR with chain of
thought, claim-by-claim correctness, the C/PC/I label under the configured thresholds).

Neither may break or slow answering: a failed write is logged and the answer still goes out,
and judging runs on one worker thread behind a bounded queue (when full, new answers stay
unjudged and can be judged later with ``aula review judge``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, Request

from app.config import Settings
from app.db import store
from app.db.session import Database
from eval.run import Pipeline

log = logging.getLogger(__name__)


def judge_answer(db: Database, pipeline: Pipeline, answer_id: int, question: str, answer: str,
                 contexts: Sequence[str] = ()) -> dict[str, Any]:
    """Judge one stored answer as the batch evaluation does (``app.judging``) and record AR,
    the automated label, the reasoning and every signal; returns the judged item."""
    from app.judging import judged_text, signals
    from eval.run import evaluate_item
    from eval.signals import AULA

    model = ""
    row = {"id": answer_id, "question": question, "answer": answer,
           "contexts": list(contexts) or None, "origin": AULA}  # the service's own answer
    try:
        item = evaluate_item(row, pipeline)
        model = pipeline.judge_model()
        score, label = item.get("ar_score"), item.get("automated")
        error = item.get("ar_error") or item.get("correctness_error")
        reasoning, measured = judged_text(item), signals(item, pipeline)
    except Exception as exc:  # noqa: BLE001 - recorded on the item; judging is best effort
        item, score, label, reasoning, measured = {}, None, None, None, None
        error = f"judge failed: {exc}"
    with db.write() as s:
        store.set_automated(s, answer_id, ar_score=score, label=label, reasoning=reasoning,
                            model=model, error=error, now=datetime.now(UTC), signals=measured)
    return item


class BackgroundJudge:
    """One worker thread; at most ``max_pending`` answers wait, the rest are skipped."""

    def __init__(self, db: Database, pipeline: Pipeline, max_pending: int = 100) -> None:
        self.db = db
        self.pipeline = pipeline
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
            judge_answer(self.db, self.pipeline, answer_id, question, answer, contexts)
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
        from app.judging import judge_client, judge_pipeline

        judge = None
        if db is not None and settings.service.review_judge:
            client = judge_client(settings, llm)
            if client is not None:
                judge = BackgroundJudge(db, judge_pipeline(settings, client),
                                        settings.service.review_judge_queue)
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
