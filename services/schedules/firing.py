"""A schedule's firing, as ScheduledRunWorkflow's activities run it (process/scheduled_runs.py): the task's
execution started through the same path as `POST /tasks/{id}/executions`, with `metadata.schedule_id`, the
schedule's task version and input, and the firing's own idempotency key; then waited for, or cancelled."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable

from contracts.schedules import Firing, Launched, ScheduledExecution
from contracts.transitions import TERMINAL_STATUSES
from infra.settings import Settings
from infra.store.schedules import ScheduleStore
from services.clients import Clients
from services.errors import WrongState
from services.executions.control import change_status
from services.executions.start import start_execution
from services.schedules import temporal

# How often a wait for an execution's end says it is alive (its activity's heartbeat).
HEARTBEAT_SECONDS = 2.0


async def launch_firing(clients: Clients, settings: Settings, firing: Firing) -> Launched:
    """The execution this firing started (the same one again for a retried firing); None when the schedule
    is gone (its task deleted), whose Temporal schedule is then deleted too."""
    try:
        found = await ScheduleStore(clients.store.pool).owned(str(uuid.UUID(firing.schedule_id)))
    except ValueError:  # no schedule of Mint's
        found = None
    if found is None:
        await temporal.delete(clients.temporal, firing.schedule_id)
        return Launched(None)
    developer, schedule = found
    execution = await start_execution(
        clients,
        settings,
        developer,
        schedule.task_id,
        schedule.spec.input,
        {"schedule_id": schedule.id},
        idempotency_key=firing.key,
        version=schedule.spec.task_version,
    )
    return Launched(ScheduledExecution(developer, execution.id))


async def await_execution(clients: Clients, run: ScheduledExecution, alive: Callable[[], None]) -> None:
    """Returns once the execution's workflow has ended, however it ended, calling `alive` meanwhile."""
    waiting = asyncio.ensure_future(clients.temporal.get_workflow_handle(run.execution_id).result())
    try:
        while not waiting.done():
            await asyncio.wait({waiting}, timeout=HEARTBEAT_SECONDS)
            alive()
    finally:
        waiting.cancel()
    if waiting.done() and not waiting.cancelled():
        # An execution that failed, or whose start failed (no workflow at all), has ended all the same.
        waiting.exception()


async def execution_ended(clients: Clients, run: ScheduledExecution) -> bool:
    """Whether the execution has ended (one no longer there has)."""
    found = await clients.store.get_execution(run.developer_id, run.execution_id)
    return found is None or found.status in TERMINAL_STATUSES


async def cancel_execution(clients: Clients, run: ScheduledExecution) -> None:
    """The execution cancelled, as `PUT /executions/{id}` with `cancelled` does; one already ended stays so."""
    reason = "cancelled by its schedule (overlap cancel_other), or its schedule's run was cancelled"
    with contextlib.suppress(WrongState):
        await change_status(clients, run.developer_id, run.execution_id, "cancelled", None, reason)
