"""The Temporal Schedule behind each of Mint's schedules (id `schedule-<id>`, on the Temporal UI's Schedules
page): built from the schedule's row, described for its next runs, paused, triggered and deleted."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from datetime import datetime
from typing import TypeVar

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleDescription,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
    WorkflowExecutionStatus,
)
from temporalio.client import ScheduleSpec as TemporalSpec
from temporalio.common import Priority, SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from contracts.records.schedules import ScheduleSpec
from contracts.schedules import SCHEDULED_RUN_WORKFLOW, temporal_schedule_id
from contracts.temporal import MINT_DEVELOPER, MINT_TASK, tenant_priority
from infra.settings import Settings
from services.errors import Invalid, Unavailable
from services.schedules.specs import parse_duration
from workflows.problems import Problem

T = TypeVar("T")
NEXT_RUNS = 5  # how many of the next firing times a schedule's answer lists

OVERLAP = {
    "skip": ScheduleOverlapPolicy.SKIP,
    "buffer_one": ScheduleOverlapPolicy.BUFFER_ONE,
    "allow_all": ScheduleOverlapPolicy.ALLOW_ALL,
    "cancel_other": ScheduleOverlapPolicy.CANCEL_OTHER,
}


temporal_id = temporal_schedule_id


def temporal_schedule(
    settings: Settings, developer: str, schedule_id: str, task_name: str, spec: ScheduleSpec, paused: bool
) -> Schedule:
    """The Temporal Schedule for a schedule: each firing starts ScheduledRunWorkflow (workflows/scheduled.py),
    which reads the schedule's row (named by its own workflow id) for the task, version and input, so those
    change without touching this."""
    attributes = TypedSearchAttributes.empty
    if settings.search_attributes == "on":
        attributes = TypedSearchAttributes(
            [SearchAttributePair(MINT_TASK, task_name[:255]), SearchAttributePair(MINT_DEVELOPER, developer)]
        )
    action = ScheduleActionStartWorkflow(
        SCHEDULED_RUN_WORKFLOW,
        id=temporal_id(schedule_id),
        task_queue=settings.task_queue,
        static_summary=f"schedule {schedule_id} of task {task_name}"[:200],
        typed_search_attributes=attributes,
        priority=tenant_priority(developer) if settings.fairness else Priority.default,
    )
    catchup = parse_duration(spec.catchup_window) if spec.catchup_window else None
    return Schedule(
        action=action,
        spec=_when(spec),
        policy=SchedulePolicy(overlap=OVERLAP[spec.overlap], catchup_window=catchup),
        state=ScheduleState(paused=paused, note=f"Mint schedule {schedule_id} (task {task_name})"[:200]),
    )


def _when(spec: ScheduleSpec) -> TemporalSpec:
    if spec.every:
        return TemporalSpec(intervals=[ScheduleIntervalSpec(every=parse_duration(spec.every))])
    return TemporalSpec(cron_expressions=[spec.cron or ""], time_zone_name=spec.timezone or "UTC")


async def create(temporal: Client, schedule_id: str, schedule: Schedule) -> None:
    await _call(temporal.create_schedule(temporal_id(schedule_id), schedule), "create")


async def replace(temporal: Client, schedule_id: str, schedule: Schedule) -> None:
    """The schedule's spec, policy and state replaced by `schedule`'s."""

    def updated(_: ScheduleUpdateInput) -> ScheduleUpdate:
        return ScheduleUpdate(schedule=schedule)

    await _call(temporal.get_schedule_handle(temporal_id(schedule_id)).update(updated), "update")


async def next_runs(temporal: Client, schedule_id: str) -> list[datetime]:
    """The next times it fires (none when paused, or when Temporal no longer has it)."""
    found = await describe(temporal, schedule_id)
    if found is None or found.schedule.state.paused:
        return []
    return list(found.info.next_action_times[:NEXT_RUNS])


async def describe(temporal: Client, schedule_id: str) -> ScheduleDescription | None:
    try:
        return await temporal.get_schedule_handle(temporal_id(schedule_id)).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None
        raise Unavailable(f"Temporal could not describe schedule {schedule_id}: {exc.message}") from None


async def is_open(temporal: Client, workflow_id: str) -> bool:
    """Whether the workflow (a schedule's run) is still running."""
    try:
        found = await temporal.get_workflow_handle(workflow_id).describe()
    except RPCError:
        return False
    return found.status == WorkflowExecutionStatus.RUNNING


async def set_paused(temporal: Client, schedule_id: str, paused: bool) -> None:
    handle = temporal.get_schedule_handle(temporal_id(schedule_id))
    await _call(handle.pause() if paused else handle.unpause(), "pause" if paused else "resume")


async def trigger(temporal: Client, settings: Settings, developer: str, schedule_id: str) -> None:
    """One run now, paused or not, whatever runs are in flight: the schedule's workflow started directly.
    (Temporal's own trigger names its run by the second, so two triggers in one second would start one.)"""
    run_id = f"{temporal_id(schedule_id)}-trigger-{uuid.uuid4()}"
    await _call(
        temporal.start_workflow(
            SCHEDULED_RUN_WORKFLOW,
            id=run_id,
            task_queue=settings.task_queue,
            static_summary=f"run of schedule {schedule_id}, triggered",
            priority=tenant_priority(developer) if settings.fairness else Priority.default,
        ),
        "trigger",
    )


async def delete(temporal: Client, schedule_id: str) -> None:
    """Deleted from Temporal (one already gone is fine); the runs in flight go on."""
    try:
        await temporal.get_schedule_handle(temporal_id(schedule_id)).delete()
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise Unavailable(f"Temporal could not delete schedule {schedule_id}: {exc.message}") from None


async def delete_all(temporal: Client, schedule_ids: list[str]) -> None:
    """The Temporal schedules of a task just deleted (their rows went with it); one that Temporal cannot
    delete now deletes itself at its next firing, finding no row (services/schedules/firing.py)."""
    for schedule_id in schedule_ids:
        try:
            await delete(temporal, schedule_id)
        except Unavailable:  # the task is deleted whatever Temporal says
            continue


async def _call(call: Awaitable[T], what: str) -> T:
    """A call to Temporal, its refusal of the schedule (a cron it does not read) a 422 naming the spec."""
    try:
        return await call
    except RPCError as exc:
        if exc.status == RPCStatusCode.INVALID_ARGUMENT:
            message = f"Temporal refused the schedule: {exc.message}"
            raise Invalid(message, problems=[Problem("body", exc.message)]) from None
        raise Unavailable(f"Temporal could not {what} the schedule: {exc.message}") from None
