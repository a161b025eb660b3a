"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, field_validator

from corpus.metadata import web_url

MAX_QUESTION = 2000


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


class AskIn(BaseModel):
    question: str = Field(description="The student's question (1 to 2,000 characters).")
    k: int = Field(10, ge=1, le=50, description="How many segments to retrieve.")
    lectures: list[str] | None = Field(None, description="Only search these lecture ids.")

    @field_validator("question")
    @classmethod
    def _question(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("the question is empty")
        if len(v) > MAX_QUESTION:
            raise ValueError(
                f"the question has {len(v)} characters; the limit is {MAX_QUESTION}"
            )
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
    timings: dict[str, float] = Field(description="seconds per stage")
    models: dict[str, str]
    error: str | None = None


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
