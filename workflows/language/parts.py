"""The parts steps are built of that hold no steps themselves: retry policies and a task's defaults for
steps that call out, prompt messages, tool references, sleep durations, waits and search specs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from workflows.language.common import JsonField, Seconds


class RetrySpec(BaseModel):
    """How a step that calls out is retried (Temporal's retry policy, in seconds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_attempts: Annotated[int, Field(ge=1, le=100)] | None = None
    initial_interval: Seconds | None = None
    backoff: Annotated[float, Field(ge=1, le=10)] | None = None
    max_interval: Seconds | None = None
    non_retryable: list[str] | None = None


# How a step is made durable (workflows/step_runs.py): `step`, each step its own event in Temporal's history
# (the default); `run`, consecutive pure and api_call steps run together in one activity, which records each
# call's answer and the transitions before it in Postgres as it goes.
Durability = Literal["step", "run"]


class StepDefaults(BaseModel):
    """A task's defaults for the steps that call out."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    timeout: Seconds | None = None
    retry: RetrySpec | None = None
    local: bool | None = None  # every call step's `local`, unless the step says
    durability: Durability | None = None  # every step's `durability`, unless the step says
    settings: JsonField | None = None  # model settings for every prompt step (the step's own win)


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: Any
    name: str | None = None


class ToolRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    arguments: Any = None


class SleepFor(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    seconds: Any = 0
    minutes: Any = 0
    hours: Any = 0
    days: Any = 0


class WaitInfo(BaseModel):
    """`schema`, when given, is what an answer must satisfy; `timeout` bounds the wait; when it passes,
    `on_timeout: fail` fails the step and `continue` goes on with `default` as the step's output."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    info: Any = None
    # Mint's extension of Julep's step: the JSON Schema a resume's input must satisfy (docs/waits.md).
    schema_: JsonField | None = Field(default=None, alias="schema")
    timeout: Seconds | None = None
    on_timeout: Literal["fail", "continue"] = "fail"
    default: Any = None

    def evaluable_fields(self, path: str) -> Iterator[tuple[str, Any, Literal["value"]]]:
        """`info`, and `default` (the output on a timeout), value fields both."""
        yield f"{path}.info", self.info, "value"
        if "default" in self.model_fields_set:
            yield f"{path}.default", self.default, "value"


class SearchSpec(BaseModel):
    """Search the docs of the task's agent (or `agent`) and of `user`, when given; both are expressions."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    query: Any
    mode: Literal["text", "vector", "hybrid"] = "hybrid"
    limit: Annotated[int, Field(ge=1, le=100)] = 10
    metadata_filter: JsonField | None = None
    agent: Any = None
    user: Any = None
    alpha: Annotated[float, Field(ge=0, le=1)] = 0.5
    mmr_strength: Annotated[float, Field(ge=0, lt=1)] = 0.0
    confidence: Annotated[float, Field(ge=-1, le=1)] = 0.0
