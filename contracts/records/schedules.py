"""A schedule as the store answers it (infra/store/schedules.py): when a task runs, with what, and how."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.json import JsonValue


@dataclass(frozen=True)
class ScheduleSpec:
    """When a schedule fires and what each firing does: a cron in a timezone, or an interval (`every`)."""

    cron: str | None = None
    timezone: str | None = None  # the cron's; None is UTC
    every: str | None = None  # a duration such as `30s` or `1h30m`
    input: JsonValue = None
    overlap: str = "skip"  # skip, buffer_one, allow_all or cancel_other
    catchup_window: str | None = None  # a duration; None: Temporal's default
    task_version: int | None = None  # the version each run runs; None: the task's latest


@dataclass(frozen=True)
class StoredSchedule:
    id: str
    task_id: str
    spec: ScheduleSpec
    paused: bool
    created_at: datetime
    updated_at: datetime
