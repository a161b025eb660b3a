"""FastAPI dependencies: the objects built once in the lifespan, handed to routes."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from app.config import Settings
from app.services import Services
from corpus.retrieve import Retriever


def get_services(request: Request) -> Services:
    return request.app.state.services  # type: ignore[no-any-return]


def get_retriever(request: Request) -> Retriever:
    return get_services(request).retriever


def get_llm(request: Request) -> Any:
    return get_services(request).llm


def get_app_settings(request: Request) -> Settings:
    return get_services(request).settings


ServicesDep = Annotated[Services, Depends(get_services)]
RetrieverDep = Annotated[Retriever, Depends(get_retriever)]
LLMDep = Annotated[Any, Depends(get_llm)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]
