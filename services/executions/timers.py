"""An execution's open timers, read from the newest events of its workflow's history.

A `sleep` writes its transition only when it ends, so Postgres cannot say when a sleeping execution wakes;
Temporal's history can: each timer starts with its duration and ends with a fired or cancelled event. The
time limit of a `wait_for_input` is a timer too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from contracts.transitions import TERMINAL_STATUSES
from services.clients import Clients
from services.errors import Unavailable
from services.executions.reads import execution_of

# Newest events first, read this far back at most: a timer still open that long ago in a busy history is
# left unreported rather than the whole history read.
MAX_EVENTS = 1_000
PAGE_SIZE = 200
# The interpreter's own yields to Temporal are 1 ms timers: not sleeps anyone asked for.
SHORTEST = 0.01


@dataclass(frozen=True)
class Timer:
    """An open timer of an execution's workflow: a `sleep`, or the time limit of a `wait_for_input`."""

    started_at: datetime
    fires_at: datetime
    seconds: float


async def execution_timers(clients: Clients, developer: str, execution_id: str) -> list[Timer]:
    """The execution's open timers, soonest first: none once it ended."""
    execution = await execution_of(clients, developer, execution_id)
    if execution.status in TERMINAL_STATUSES:
        return []
    return await open_timers(clients.temporal, execution.id)


async def open_timers(temporal: Client, execution_id: str) -> list[Timer]:
    """The workflow's timers that have neither fired nor been cancelled, soonest first."""
    closed: set[int] = set()
    found: list[Timer] = []
    token, read = b"", 0
    while read < MAX_EVENTS:
        request = GetWorkflowExecutionHistoryReverseRequest(
            namespace=temporal.namespace,
            execution=WorkflowExecution(workflow_id=execution_id),
            maximum_page_size=PAGE_SIZE,
            next_page_token=token,
        )
        try:
            response = await temporal.workflow_service.get_workflow_execution_history_reverse(request)
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return []  # no workflow (its start failed, or it is past retention): no timers
            raise Unavailable(
                f"could not read the timers of execution {execution_id}: {exc.message}"
            ) from None
        for event in response.history.events:
            read += 1
            if event.HasField("timer_fired_event_attributes"):
                closed.add(event.timer_fired_event_attributes.started_event_id)
            elif event.HasField("timer_canceled_event_attributes"):
                closed.add(event.timer_canceled_event_attributes.started_event_id)
            elif event.HasField("timer_started_event_attributes") and event.event_id not in closed:
                found += _timer(event)
        token = response.next_page_token
        if not token:
            break
    return sorted(found, key=lambda timer: timer.fires_at)


def _timer(event: HistoryEvent) -> list[Timer]:
    duration = event.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
    if duration.total_seconds() < SHORTEST:
        return []
    started = event.event_time.ToDatetime(tzinfo=UTC)
    return [Timer(started, started + duration, duration.total_seconds())]
