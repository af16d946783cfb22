"""What crosses the Temporal boundary for schedules: the workflow a Temporal Schedule starts at each firing,
the activities it runs, and their payloads. Kept apart from contracts/temporal.py's tables, which list what an
execution's workflow and the fast test layer's fakes need: a firing is not a step. The worker registers these
on its main queue (process/worker.py); tests/test_schedules.py holds the functions to these types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SCHEDULED_RUN_WORKFLOW = "ScheduledRunWorkflow"
LAUNCH_SCHEDULED_RUN = "launch_scheduled_run"
AWAIT_SCHEDULED_RUN = "await_scheduled_run"
CANCEL_SCHEDULED_RUN = "cancel_scheduled_run"
SCHEDULED_RUN_ENDED = "scheduled_run_ended"


SCHEDULE_PREFIX = "schedule-"
UUID_CHARS = 36


def temporal_schedule_id(schedule_id: str) -> str:
    """The Temporal Schedule's id; each run it starts is this id followed by `-` and the time it fired (a
    triggered run: by `-trigger-` and a UUID)."""
    return SCHEDULE_PREFIX + schedule_id


def schedule_of_run(workflow_id: str) -> str:
    """The schedule a run's workflow id names. The schedule's action carries no argument: Mint's codec seals
    each payload for the workflow id it is written for, and the schedule's runs have ids of their own."""
    return workflow_id.removeprefix(SCHEDULE_PREFIX)[:UUID_CHARS]


@dataclass(frozen=True)
class Firing:
    """One firing of a schedule: `key` (the run's workflow id) makes its execution's start idempotent."""

    schedule_id: str
    key: str


@dataclass(frozen=True)
class ScheduledExecution:
    """The execution a firing started, and whose."""

    developer_id: str
    execution_id: str


@dataclass(frozen=True)
class Launched:
    """What a firing's start did: the execution it started, or none when the schedule is gone."""

    execution: ScheduledExecution | None


# name -> (input type, result type).
SCHEDULE_ACTIVITIES: dict[str, tuple[Any, Any]] = {
    LAUNCH_SCHEDULED_RUN: (Firing, Launched),
    AWAIT_SCHEDULED_RUN: (ScheduledExecution, None),
    CANCEL_SCHEDULED_RUN: (ScheduledExecution, None),
    SCHEDULED_RUN_ENDED: (ScheduledExecution, bool),
}
SCHEDULE_WORKFLOWS: dict[str, tuple[Any, Any]] = {
    # No argument when the schedule starts it; the execution waited for when it continues as new.
    SCHEDULED_RUN_WORKFLOW: (ScheduledExecution | None, str | None),
}
