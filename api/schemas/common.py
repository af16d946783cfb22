"""Shapes every resource's routes share: names, metadata, errors, lists, deletions and SSE answers."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

Name = Annotated[str, Field(min_length=1, max_length=255)]


Metadata = dict[str, Any]


class RequestBody(BaseModel):
    """A body that refuses keys it does not know (a typo is a 422, not silently ignored)."""

    model_config = ConfigDict(extra="forbid")


class ProblemOut(BaseModel):
    path: str
    message: str


class ErrorOut(BaseModel):
    """Every error answer (api/errors.py): a message a person can act on and, for bad input, where."""

    error: str
    detail: str
    problems: list[ProblemOut] = []


class ResourceDeleted(BaseModel):
    id: str
    deleted_at: datetime
    jobs: list[str] = []


def event_stream(data_schema: dict[str, Any], description: str) -> dict[int | str, dict[str, Any]]:
    """openapi.json's 200 of an SSE route: each event's `data` is JSON matching `data_schema` (written as
    FastAPI writes its own SSE routes: Open API 3.2's `itemSchema`, one event)."""
    event = {
        "type": "object",
        "required": ["data"],
        "properties": {
            "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": data_schema},
            "event": {"type": "string"},
            "id": {"type": "string"},
            "retry": {"type": "integer", "minimum": 0},
        },
    }
    return {200: {"description": description, "content": {"text/event-stream": {"itemSchema": event}}}}


T = TypeVar("T")


class ItemList(BaseModel, Generic[T]):
    items: list[T]
