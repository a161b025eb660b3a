"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, field_validator

from answer.retrieve import Retrieved
from corpus.metadata import web_url
from eval.record import normalise_newlines

MAX_QUESTION = 2000
MAX_LECTURES = 500  # lecture ids one question may be limited to
MAX_LECTURE_ID = 300
# A string that is not blank: it has a character that Python's str.strip keeps. Spelled out,
# because \\S differs between Python, ECMAScript and Rust regexes (U+001C..U+001F).
NOT_BLANK = (r"[^\u0009-\u000d\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029"
             r"\u202f\u205f\u3000]")
NO_NUL = r"^[^\x00]*$"

# The longest request head these limits allow: ``GET /search`` with the longest question and
# every lecture id it may name, percent-encoded (a character is at most 4 UTF-8 bytes, each
# written %XX), plus 64 KiB of headers. The server must read a head this long even when it
# arrives in pieces (uvicorn's h11 parser refuses an incomplete head past 16 KiB by default).
MAX_REQUEST_HEAD = 12 * (MAX_QUESTION + MAX_LECTURES * (MAX_LECTURE_ID + len("&lecture="))) \
    + 64 * 1024



def _encodable(value: str) -> str:
    """``value`` when it can be written as UTF-8: JSON can carry a lone surrogate
    (``"\\ud800"``) that no encoder, tokenizer or database takes."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"character {exc.start + 1} is not text (a lone surrogate, "
                         f"U+{ord(value[exc.start]):04X})") from None
    return value


Text = Annotated[str, AfterValidator(_encodable)]
"""A string of a request body: refused with 422 when it cannot be encoded (lone surrogates)."""

LectureId = Annotated[str, Field(min_length=1, max_length=MAX_LECTURE_ID, pattern=NO_NUL),
                      AfterValidator(_encodable)]


SSE_EVENT: dict[str, Any] = {
    "type": "object", "required": ["event", "data"],
    "properties": {"event": {"type": "string", "enum": ["segments", "moments", "delta", "done"]},
                   "data": {"type": "string", "description": "JSON"}}}
"""One server-sent event of ``POST /ask/stream``, for the OpenAPI spec."""


class ErrorOut(BaseModel):
    """Every 4xx/5xx body: ``detail`` says what is wrong in a line; a 422 also names the first
    bad ``field`` and lists ``errors`` (validation errors or one line per bad import row)."""

    detail: str
    field: str | None = None
    errors: list[dict[str, Any] | str] | None = None


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these status codes, each with the ``ErrorOut`` body."""
    words = {400: "The body is not JSON", 401: "Login required (session cookie or bearer token)",
             403: "Not allowed (another role, or a write without the CSRF token)",
             404: "Not found", 409: "Conflict", 413: "Request body over the limit",
             422: "Invalid request: `detail` says why, `field` names what",
             429: "Too many requests (Retry-After)",
             503: "Unavailable now (Retry-After): nothing was saved"}
    return {c: {"model": ErrorOut, "description": words.get(c, "Error")} for c in codes}


def _web_link(url: str) -> str:
    """Only http(s) links leave the API (an index built before ingest normalised links may
    hold others): a host without a scheme gets ``https://``, anything else becomes ``""``."""
    try:
        return web_url(url)
    except ValueError:
        return ""


WebLink = Annotated[str, AfterValidator(_web_link)]


class HitOut(BaseModel):
    corpus_id: int
    score: float
    lecture_id: str
    title: str
    url: WebLink
    start: float = Field(description="seconds")
    end: float = Field(description="seconds")
    text: str
    answer_start: float | None = Field(
        None, description="seconds: where the window's best-matching passage starts")
    unit_score: float | None = Field(
        None, description="E5 cosine of the window's most similar 30 s passage to the question")


class AskIn(BaseModel):
    question: Text = Field(
        description="The student's question: 1 to 2,000 characters as sent (spaces count), "
                    "not all blank.",
        json_schema_extra={"minLength": 1, "maxLength": MAX_QUESTION, "pattern": NOT_BLANK})
    k: int = Field(10, ge=1, le=50, description="How many segments to retrieve.")
    lectures: list[LectureId] | None = Field(
        None, max_length=MAX_LECTURES, description="Only search these lecture ids.")

    @field_validator("question")
    @classmethod
    def _question(cls, v: str) -> str:
        # measured as sent: a long run of spaces is as costly to receive as any text
        if len(v) > MAX_QUESTION:
            raise ValueError(
                f"the question has {len(v)} characters; the limit is {MAX_QUESTION}"
            )
        v = normalise_newlines(v).strip()  # a bare CR is a line break, as everywhere after
        if not v:
            raise ValueError("the question is empty")
        return v


class CitationOut(BaseModel):
    n: list[int]
    lecture_id: str
    title: str
    start: float
    end: float
    url: WebLink


class MomentOut(BaseModel):
    lecture_id: str
    title: str
    start: float = Field(description="seconds: the focused passage's span")
    end: float
    answer_start: float = Field(description="seconds: where the answering sentence starts")
    url: WebLink = Field(description="the video, opening at answer_start")
    snippet: str
    score: float = Field(description="retrieval score of the window")
    p: float | None = Field(None, description="P(the passage answers), from the evidence check")
    corpus_id: int = -1


class SentenceOut(BaseModel):
    text: str
    cites: list[int]
    p: float | None = Field(description="P(the cited passage confirms the sentence)")
    supported: bool | None
    moved_from: list[int] | None = Field(
        None, description="the passages the generator cited, when none confirmed the sentence "
                          "and the post-check moved its citation to one that does (cites); "
                          "[] when it cited none and the post-check added one")
    at: float | None = Field(
        None, description="seconds: where the (first) cited passage says what the sentence "
                          "says; None when it could not be placed (the citation's link holds)")
    url: WebLink = Field("", description="the video, opening at at: where this sentence's "
                                          "[n] leads")


class AskOut(BaseModel):
    question: str
    answer: str | None = Field(description="None when no answer could be written (see note)")
    covered: bool | None = Field(
        description="True: answered from the lectures; False: they don't cover it; None: "
                    "undecided (the LLM failed)")
    citations: list[CitationOut]
    segments: list[HitOut]
    moments: list[MomentOut] = Field(
        default_factory=list, description="the best moments, shown before the answer")
    confidence: float | None = Field(
        None, description="answered: P(best passage answers) x mean P(sentences confirmed); "
                          "declined: 1 - P(best passage answers)")
    sentences: list[SentenceOut] = Field(
        default_factory=list, description="answer sentences checked against what they cite")
    strategy: str = ""
    note: str = Field("", description="a line for the student when there is no answer")
    reason: str = Field(
        "", description="why it was answered or declined: the course-question check's or the "
                        "evidence gate's decision with its signals (for instructors and logs)")
    timings: dict[str, float] = Field(description="seconds per stage")
    models: dict[str, str]
    error: str | None = None
    search_query: str | None = Field(
        None, description="what was searched, when the question was translated into the "
                          "lectures' language (null: the question as typed)")
    quoted: int | None = Field(
        None, description="the passage number quoted in the answer because the model's own "
                          "words only restated the question (null: the answer is the model's)")


class SearchOut(BaseModel):
    query: str
    mode: str
    hits: list[HitOut]
    timings: dict[str, float]


class LectureOut(BaseModel):
    lecture_id: str
    title: str
    url: WebLink
    course: str
    segments: int


class HealthOut(BaseModel):
    status: str
    lectures: int
    segments: int
    embedding_model: str
    llm_model: str
    llm: str = Field(description="which LLM answers: embedded, remote or none (never where: "
                                 "the endpoint is in the server's log)")
    vector_store: str = Field("faiss", description="where windows are searched: faiss (the "
                              "index folder) or milvus")
    index_version: str | None = Field(
        None, description="the index version this server answers from; replicas that show "
                          "the same one serve the same lectures")


def ask_out(found: Retrieved, reply: Any, timings: dict[str, float], models: dict[str, str]
            ) -> AskOut:
    """The ``/ask`` body for a reply of ``answer.pipeline`` (the CLI prints the same);
    ``models``: the embedding and LLM ids that made it."""
    answer = reply.answer
    question = found.question.text
    return AskOut(
        question=question,
        answer=None if answer is None else answer.text,
        covered=reply.covered,
        citations=[] if answer is None else [CitationOut(**c.to_dict()) for c in answer.citations],
        segments=[HitOut(**h.to_dict()) for h in found.hits],
        moments=[MomentOut(**m.to_dict()) for m in reply.moments],
        confidence=reply.confidence,
        sentences=[SentenceOut(**c.to_dict()) for c in reply.sentences],
        strategy=reply.strategy,
        note=reply.note,
        reason=getattr(reply, "reason", "") or "",
        timings=timings,
        models=models,
        error=reply.error,
        search_query=searched(found),
        quoted=getattr(reply, "quoted", None),
    )


def searched(found: Retrieved) -> str | None:
    """What was searched, when it is not the question as typed (its translation, or the
    question without its chat framing); None otherwise."""
    return None if found.query == found.question.text else found.query
