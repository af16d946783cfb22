"""Schedules, as the API serves them: created on a task (its version pinned), listed, read with their next
runs, changed, paused, triggered and deleted. Each is a row (tenancy, listing, what a firing reads) and a
Temporal Schedule (when it fires): services/schedules/temporal.py."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from temporalio.client import ScheduleActionExecutionStartWorkflow

from contracts.json import JsonValue
from contracts.records.pages import Page
from contracts.records.schedules import ScheduleSpec, StoredSchedule
from infra.settings import Settings
from infra.store.schedules import ScheduleStore
from services import tasks
from services.clients import Clients
from services.errors import Invalid, NotFound, TooMany
from services.executions.start import check_input
from services.ids import checked_id
from services.schedules import temporal
from workflows.problems import Problem

# After a pause, how long to wait for the runs already started to have their executions (so that none
# appears after the pause has answered).
PAUSE_SETTLES_WITHIN = 10.0


@dataclass(frozen=True)
class Schedule:
    """A schedule as the API answers it."""

    id: str
    task_id: str
    task_version: int | Literal["latest"]
    cron: str | None
    timezone: str | None
    every: str | None
    input: JsonValue
    overlap: str
    catchup_window: str | None
    paused: bool
    next_runs: list[datetime]
    temporal_schedule_id: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, stored: StoredSchedule, next_runs: list[datetime]) -> Schedule:
        spec = stored.spec
        return cls(
            id=stored.id,
            task_id=stored.task_id,
            task_version="latest" if spec.task_version is None else spec.task_version,
            cron=spec.cron,
            timezone=spec.timezone,
            every=spec.every,
            input=spec.input,
            overlap=spec.overlap,
            catchup_window=spec.catchup_window,
            paused=stored.paused,
            next_runs=next_runs,
            temporal_schedule_id=temporal.temporal_id(stored.id),
            created_at=stored.created_at,
            updated_at=stored.updated_at,
        )


@dataclass(frozen=True)
class ScheduleChange:
    """A PATCH: the fields named in `given` take these values (`task_version` "latest" unpins it)."""

    given: frozenset[str]
    cron: str | None = None
    timezone: str | None = None
    every: str | None = None
    input: JsonValue = None
    overlap: str | None = None
    catchup_window: str | None = None
    paused: bool | None = None
    task_version: int | Literal["latest"] | None = None


async def create_schedule(
    clients: Clients, settings: Settings, developer: str, task_id: str, spec: ScheduleSpec, paused: bool
) -> Schedule:
    """A schedule of the task at its latest version (pinned), in Postgres and in Temporal."""
    task = await tasks.get(clients, developer, task_id)
    spec = replace(spec, task_version=task.version)
    _check_when(spec)
    await check_input(task.document, spec.input)
    store = ScheduleStore(clients.store.pool)
    limit = settings.max_schedules_per_developer
    stored = await store.create(developer, str(uuid.uuid4()), task.id, spec, paused, limit)
    if stored is None:
        raise TooMany(
            f"this developer has {limit} schedules, the limit (MINT_MAX_SCHEDULES_PER_DEVELOPER): delete one "
            "first"
        )
    name = str(task.document.get("name") or task.id)
    schedule = temporal.temporal_schedule(settings, developer, stored.id, name, spec, paused)
    try:
        await temporal.create(clients.temporal, stored.id, schedule)
    except BaseException:
        await store.delete(developer, stored.id)  # no row without its Temporal schedule
        raise
    return Schedule.of(stored, await temporal.next_runs(clients.temporal, stored.id))


async def task_schedules(clients: Clients, developer: str, task_id: str, page: Page) -> list[Schedule]:
    task = await tasks.get(clients, developer, task_id)
    found = await ScheduleStore(clients.store.pool).for_task(developer, task.id, page)
    runs = await asyncio.gather(*(temporal.next_runs(clients.temporal, s.id) for s in found))
    return [Schedule.of(stored, next_runs) for stored, next_runs in zip(found, runs, strict=True)]


async def get_schedule(clients: Clients, developer: str, schedule_id: str) -> Schedule:
    stored = await stored_schedule(clients, developer, schedule_id)
    return Schedule.of(stored, await temporal.next_runs(clients.temporal, stored.id))


async def stored_schedule(clients: Clients, developer: str, schedule_id: str) -> StoredSchedule:
    """The developer's schedule; NotFound (naming the id as given) if there is none."""
    found = await ScheduleStore(clients.store.pool).get(developer, checked_id(schedule_id, "schedule"))
    if found is None:
        raise NotFound("schedule", schedule_id)
    return found


async def change_schedule(
    clients: Clients, settings: Settings, developer: str, schedule_id: str, change: ScheduleChange
) -> Schedule:
    """The schedule with `change` applied, in Postgres and then in Temporal."""
    stored = await stored_schedule(clients, developer, schedule_id)
    spec = _changed(stored.spec, change)
    _check_when(spec)
    task = await tasks.get(clients, developer, stored.task_id)
    if spec.task_version is not None and spec.task_version != stored.spec.task_version:
        versioned = await clients.store.get_task(developer, task.id, spec.task_version)
        if versioned is None:
            problem = f"task {task.id} has no version {spec.task_version} (its latest is {task.version})"
            raise Invalid(problem, problems=[Problem("body.task_version", problem)])
        await check_input(versioned.document, spec.input)
    elif "input" in change.given:
        await check_input(task.document, spec.input)
    paused = stored.paused if change.paused is None else change.paused
    # Temporal first: a spec it refuses leaves the row as it was.
    if _when_of(spec) != _when_of(stored.spec):
        name = str(task.document.get("name") or task.id)
        schedule = temporal.temporal_schedule(settings, developer, stored.id, name, spec, paused)
        await temporal.replace(clients.temporal, stored.id, schedule)
    if paused != stored.paused:
        await temporal.set_paused(clients.temporal, stored.id, paused)
    updated = await ScheduleStore(clients.store.pool).update(developer, stored.id, spec, paused)
    if updated is None:
        raise NotFound("schedule", schedule_id)
    if paused and not stored.paused:
        await _settled(clients, developer, updated)
    return Schedule.of(updated, await temporal.next_runs(clients.temporal, stored.id))


async def trigger_schedule(
    clients: Clients, settings: Settings, developer: str, schedule_id: str
) -> Schedule:
    """One run now (paused or not, whatever runs are in flight)."""
    stored = await stored_schedule(clients, developer, schedule_id)
    await temporal.trigger(clients.temporal, settings, developer, stored.id)
    return Schedule.of(stored, await temporal.next_runs(clients.temporal, stored.id))


async def delete_schedule(clients: Clients, developer: str, schedule_id: str) -> None:
    """Gone from Temporal, then from Postgres; the executions it started go on."""
    stored = await stored_schedule(clients, developer, schedule_id)
    await temporal.delete(clients.temporal, stored.id)
    await ScheduleStore(clients.store.pool).delete(developer, stored.id)


def _changed(spec: ScheduleSpec, change: ScheduleChange) -> ScheduleSpec:
    given = change.given
    cron = change.cron if "cron" in given else spec.cron
    timezone = change.timezone if "timezone" in given else spec.timezone
    every = change.every if "every" in given else spec.every
    if change.cron:  # a cron replaces an interval, and an interval a cron
        every = None
    if change.every:
        cron = None
        timezone = change.timezone if "timezone" in given else None
    version = spec.task_version
    if "task_version" in given:
        version = change.task_version if isinstance(change.task_version, int) else None
    return ScheduleSpec(
        cron=cron,
        timezone=timezone,
        every=every,
        input=change.input if "input" in given else spec.input,
        overlap=change.overlap or spec.overlap,
        catchup_window=change.catchup_window if "catchup_window" in given else spec.catchup_window,
        task_version=version,
    )


def _when_of(spec: ScheduleSpec) -> tuple[str | None, ...]:
    """What the Temporal schedule holds of a spec (the version and the input are read at each firing)."""
    return (spec.cron, spec.timezone, spec.every, spec.overlap, spec.catchup_window)


def _check_when(spec: ScheduleSpec) -> None:
    """A schedule fires on a cron or on an interval: exactly one of them."""
    if (spec.cron is None) == (spec.every is None):
        problem = "give either `cron` (with an optional `timezone`) or `every`, not both or neither"
        raise Invalid(problem, problems=[Problem("body.cron", problem)])


async def _settled(clients: Clients, developer: str, stored: StoredSchedule) -> None:
    """Once a pause has answered, no execution of the schedule appears: the runs Temporal started before it
    each have their execution (a run's workflow id is its execution's idempotency key)."""
    found = await temporal.describe(clients.temporal, stored.id)
    running = [] if found is None else found.info.running_actions
    keys = [a.workflow_id for a in running if isinstance(a, ScheduleActionExecutionStartWorkflow)]
    deadline = asyncio.get_running_loop().time() + PAUSE_SETTLES_WITHIN
    for key in keys:
        while await clients.store.execution_by_key(developer, stored.task_id, key) is None:
            if asyncio.get_running_loop().time() > deadline:
                return
            if not await temporal.is_open(clients.temporal, key):
                break  # its start failed (the task's input_schema refuses the input, say): none will come
            await asyncio.sleep(0.2)
