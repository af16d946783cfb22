"""Reading executions, their transitions and their trace, each the caller's."""

from __future__ import annotations

from contracts.json import JsonObject
from infra.store.execution_records import Execution, TaskVersion, Transition
from infra.store.tables import Page, Store
from infra.telemetry.traces import build_trace
from services.errors import NotFound
from services.ids import checked_id


async def execution_of(store: Store, developer: str, execution_id: str) -> Execution:
    """The developer's execution `execution_id`; NotFound (naming the id as given) if there is none."""
    execution = await store.get_execution(developer, checked_id(execution_id, "execution"))
    if execution is None:
        raise NotFound("execution", execution_id)
    return execution


async def task_of(store: Store, developer: str, task_id: str) -> TaskVersion:
    """The developer's task `task_id`, at its latest version."""
    task = await store.get_task(developer, checked_id(task_id, "task"))
    if task is None:
        raise NotFound("task", task_id)
    return task


async def task_executions(store: Store, developer: str, task_id: str, page: Page) -> list[Execution]:
    task = await task_of(store, developer, task_id)
    return await store.task_executions(developer, task.id, page)


async def all_executions(store: Store, developer: str, page: Page, status: str | None) -> list[Execution]:
    """The developer's executions across tasks, each with its task's name."""
    return await store.list_executions(developer, page, status)


async def transitions(
    store: Store, developer: str, execution_id: str, page: Page, scope_id: str | None
) -> list[Transition]:
    execution = await execution_of(store, developer, execution_id)
    return await store.list_transitions(developer, execution.id, page, scope_id=scope_id)


async def transition(store: Store, developer: str, execution_id: str, transition_id: str) -> Transition:
    execution = await execution_of(store, developer, execution_id)
    found = await store.get_transition(developer, execution.id, checked_id(transition_id, "transition"))
    if found is None:
        raise NotFound("transition", transition_id)
    return found


async def trace(store: Store, developer: str, execution_id: str) -> JsonObject:
    """The execution's trace: runs, steps, model and tool calls, handoffs and guardrails, in order, under one
    trace id (built from its transitions: infra/telemetry/traces.py)."""
    execution = await execution_of(store, developer, execution_id)
    return build_trace({"id": execution.id}, await store.all_transitions(developer, execution.id))
