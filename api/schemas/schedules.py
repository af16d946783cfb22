"""Schedules: a task run on a cron (in a timezone) or an interval. Every value that says when is checked
here, so a 422 names its field and nothing invalid reaches Temporal."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field
from pydantic_core import PydanticCustomError

from api.schemas.common import RequestBody
from contracts.records.schedules import ScheduleSpec
from services.schedules.manage import ScheduleChange
from services.schedules.specs import (
    SHORTEST_CATCHUP,
    SHORTEST_EVERY,
    cron_problem,
    duration_problem,
    timezone_problem,
)


def _checked(problem: str | None, kind: str) -> None:
    if problem:
        raise PydanticCustomError(kind, "{message}", {"message": problem})


def _cron(value: str) -> str:
    _checked(cron_problem(value), "cron")
    return value.strip()


def _timezone(value: str) -> str:
    _checked(timezone_problem(value), "timezone")
    return value


def _seconds_as_text(value: object) -> object:
    """A bare number of seconds (`"every": 30`) reads as `30s`."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return f"{value:g}s"
        except OverflowError:  # an integer past any float (`10**400`): its digits, over the length limit
            return f"{value}s"
    return value


def _every(value: str) -> str:
    _checked(duration_problem(value, SHORTEST_EVERY), "duration")
    return value.strip()


def _catchup(value: str) -> str:
    _checked(duration_problem(value, SHORTEST_CATCHUP), "duration")
    return value.strip()


Cron = Annotated[str, Field(max_length=255, examples=["0 9 * * 1-5"]), AfterValidator(_cron)]
Timezone = Annotated[str, Field(max_length=64, examples=["Europe/Paris"]), AfterValidator(_timezone)]
# The length before the number-as-text reading: after it, pydantic words the limit as "items".
Every = Annotated[
    str, Field(max_length=64, examples=["30s"]), BeforeValidator(_seconds_as_text), AfterValidator(_every)
]
CatchupWindow = Annotated[
    str, Field(max_length=64, examples=["10m"]), BeforeValidator(_seconds_as_text), AfterValidator(_catchup)
]
Overlap = Literal["skip", "buffer_one", "allow_all", "cancel_other"]


class ScheduleCreate(RequestBody):
    """`cron` (with an optional `timezone`, default UTC) or `every`; each run starts an execution with
    `input`, of the task's version of now (PATCH `task_version` to change it)."""

    cron: Cron | None = None
    timezone: Timezone | None = None
    every: Every | None = None
    input: Any = Field(default_factory=dict)
    overlap: Overlap = "skip"  # what a firing does while the previous run's execution has not ended
    catchup_window: CatchupWindow | None = None  # how late a missed firing may still run
    paused: bool = False

    def spec(self) -> ScheduleSpec:
        return ScheduleSpec(
            cron=self.cron,
            timezone=self.timezone,
            every=self.every,
            input=self.input,
            overlap=self.overlap,
            catchup_window=self.catchup_window,
        )


class SchedulePatch(RequestBody):
    """The fields given replace the schedule's (`cron` replaces `every` and the other way round);
    `{"paused": true}` pauses it, `{"task_version": "latest"}` runs the task's latest version from now on."""

    cron: Cron | None = None
    timezone: Timezone | None = None
    every: Every | None = None
    input: Any = None
    overlap: Overlap | None = None
    catchup_window: CatchupWindow | None = None
    paused: bool | None = None
    task_version: Annotated[int, Field(ge=1)] | Literal["latest"] | None = None

    def change(self) -> ScheduleChange:
        return ScheduleChange(
            given=frozenset(self.model_fields_set),
            cron=self.cron,
            timezone=self.timezone,
            every=self.every,
            input=self.input,
            overlap=self.overlap,
            catchup_window=self.catchup_window,
            paused=self.paused,
            task_version=self.task_version,
        )


class Schedule(BaseModel):
    id: str
    task_id: str
    task_version: int | Literal["latest"]
    cron: str | None = None
    timezone: str | None = None
    every: str | None = None
    input: Any = None
    overlap: str
    catchup_window: str | None = None
    paused: bool
    next_runs: list[datetime]  # the next (up to 5) times it fires; none while paused
    temporal_schedule_id: str  # its id on the Temporal UI's Schedules page
    created_at: datetime
    updated_at: datetime
