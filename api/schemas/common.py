"""Shapes every resource's routes share: names, metadata, errors, lists, deletions and SSE answers."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from api.warning_header import note_ignored
from contracts.json import JsonObject
from workflows.part_checks import tool_parameters_problem

Name = Annotated[str, Field(min_length=1, max_length=255)]


def _tool_parameters_checked(metadata: JsonObject) -> JsonObject:
    """Metadata whose `x-tool-parameters` would fix no argument is refused, where it is (part_checks.py)."""
    found = tool_parameters_problem(metadata)
    if found is not None:
        below, message = found
        raise PydanticCustomError("tool_parameters", "{message}", {"message": message, "below": below})
    return metadata


# The metadata a request gives an agent, a user, a session or an execution: tools read their arguments
# from its `x-tool-parameters` (a task's is checked with the task).
ToolMetadata = Annotated[JsonObject, AfterValidator(_tool_parameters_checked)]


class RequestBody(BaseModel):
    """A body that ignores keys it does not know, as Julep's do, and says which (api/warning_header.py: the
    answer's `Warning` header names each, with the key it is close to)."""

    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _note_unknown_keys(cls, data: object) -> object:
        if isinstance(data, dict):
            known = {name for name in cls.model_fields} | {
                f.alias for f in cls.model_fields.values() if f.alias
            }
            unknown = [key for key in data if isinstance(key, str) and key not in known]
            if unknown:
                note_ignored(cls.__name__, unknown, sorted(known))
        return data


class ProblemOut(BaseModel):
    """Where (a path such as `main[0].evaluate`) and what: a task's warnings."""

    path: str
    message: str


class ErrorDetail(BaseModel):
    """One thing wrong with the input, in Julep's form: where (`loc`, a path such as `main[0].evaluate`), what."""

    loc: str
    msg: str
    type: str = "validation_error"


class ErrorBody(BaseModel):
    message: str
    code: str  # `validation_error` for bad input (422), else `http_<status>`, as Julep's
    type: str | None = None  # a failure of a named kind (`BudgetExceeded`, ...), else `http_error`
    details: list[ErrorDetail] | None = None


class ErrorOut(BaseModel):
    """Every error answer (api/errors.py), Julep's shape: `error` says what went wrong (a message a person can
    act on) and, for bad input, where; `detail` is the message again, for clients that read FastAPI's."""

    error: ErrorBody
    detail: str


class ResourceDeleted(BaseModel):
    id: str
    deleted_at: datetime
    jobs: list[str] = []


def event_stream(data_schema: dict[str, object], description: str) -> dict[int | str, dict[str, object]]:
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
