"""Reading executions, their transitions and their trace, each the caller's."""

from __future__ import annotations

from dataclasses import replace

from contracts.json import JsonObject
from contracts.records.executions import Execution, OpenWait, Transition
from contracts.records.pages import Page
from contracts.records.tasks import TaskVersion
from infra.store.tables import Store
from infra.telemetry.traces import build_trace
from services.clients import Clients
from services.errors import NotFound
from services.ids import checked_id


async def execution_of(clients: Clients, developer: str, execution_id: str) -> Execution:
    """The developer's execution `execution_id`; NotFound (naming the id as given) if there is none."""
    execution = await clients.store.get_execution(developer, checked_id(execution_id, "execution"))
    if execution is None:
        raise NotFound("execution", execution_id)
    return execution


async def execution_with_waits(clients: Clients, developer: str, execution_id: str) -> Execution:
    """The developer's execution with its open waits, oldest first (none unless it awaits input)."""
    execution = await execution_of(clients, developer, execution_id)
    return replace(execution, waits=tuple(await open_waits(clients.store, developer, execution)))


async def open_waits(store: Store, developer: str, execution: Execution) -> list[OpenWait]:
    """The execution's open waits, oldest first: read only while it awaits input (a wait opens and its
    answer closes it in the same write as the status)."""
    if execution.status != "awaiting_input":
        return []
    return await store.open_waits(developer, execution.id)


async def task_of(clients: Clients, developer: str, task_id: str, version: int | None = None) -> TaskVersion:
    """The developer's task `task_id`, at its latest version (or at `version`)."""
    task = await clients.store.get_task(developer, checked_id(task_id, "task"), version)
    if task is None:
        raise NotFound("task", task_id if version is None else f"{task_id} version {version}")
    return task


async def task_executions(clients: Clients, developer: str, task_id: str, page: Page) -> list[Execution]:
    task = await task_of(clients, developer, task_id)
    return await clients.store.task_executions(developer, task.id, page)


async def all_executions(clients: Clients, developer: str, page: Page, status: str | None) -> list[Execution]:
    """The developer's executions across tasks, each with its task's name."""
    return await clients.store.list_executions(developer, page, status)


async def transitions(
    clients: Clients, developer: str, execution_id: str, page: Page, scope_id: str | None
) -> list[Transition]:
    execution = await execution_of(clients, developer, execution_id)
    return await clients.store.list_transitions(developer, execution.id, page, scope_id=scope_id)


async def transition(clients: Clients, developer: str, execution_id: str, transition_id: str) -> Transition:
    execution = await execution_of(clients, developer, execution_id)
    found = await clients.store.get_transition(
        developer, execution.id, checked_id(transition_id, "transition")
    )
    if found is None:
        raise NotFound("transition", transition_id)
    return found


async def trace(clients: Clients, developer: str, execution_id: str) -> JsonObject:
    """The execution's trace: runs, steps, model and tool calls, handoffs and guardrails, in order, under one
    trace id (built from its transitions: infra/telemetry/traces.py)."""
    execution = await execution_of(clients, developer, execution_id)
    return build_trace({"id": execution.id}, await clients.store.all_transitions(developer, execution.id))
