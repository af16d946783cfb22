"""Starting an execution: its input checked, its row inserted (`queued`), its workflow started
(services/executions/launch.py); with an idempotency key, a repeated request answers the first one's."""

from __future__ import annotations

import asyncio
import json

from contracts.budgets import Budget
from contracts.json import JsonObject, JsonValue
from contracts.records.executions import Execution
from contracts.records.tasks import TaskVersion
from infra.settings import Settings
from infra.store.budgets import Budgets
from infra.store.rows import Conflict
from services.clients import Clients
from services.errors import Invalid, TooLarge, TooMany, WrongState
from services.executions.launch import launch, launch_reads, task_callback_url
from services.executions.reads import task_of
from services.ids import checked_id
from workflows.input_schema import input_problems

# Large inputs cross Temporal by reference (infra/temporal/claim_check.py); this bounds what a request may carry.
MAX_INPUT_BYTES = 32 * 1024 * 1024
# An input this small is checked against the task's input_schema on the event loop (a thread hop costs more).
INLINE_CHECK_BYTES = 16 * 1024


async def start_execution(
    clients: Clients,
    settings: Settings,
    developer: str,
    task_id: str,
    body_input: JsonValue,
    metadata: JsonObject,
    idempotency_key: str | None = None,
    version: int | None = None,
    callback_url: str | None = None,
) -> Execution:
    """Validate the input, insert the execution (`queued`), start its workflow; a failed start is recorded.

    With an idempotency key, a repeated request returns the execution the first one created. `version`: the
    task's version to run (a schedule's pinned one), else its latest. `callback_url`: where its statuses are
    posted, instead of the task's."""
    store = clients.store
    # What a start reads, read at once (each on a connection of its own) rather than one after another.
    task, existing, in_flight, default_budget = await asyncio.gather(
        task_of(clients, developer, task_id, version),
        _by_key(clients, developer, task_id, idempotency_key),
        store.executions_in_flight(developer),
        Budgets(store.pool).default_budget(developer),
    )
    await check_input(task.document, body_input)
    if existing is not None:
        return await _replayed(clients, settings, developer, task, existing, body_input)
    refuse_past_limit(settings, in_flight)
    budget = limits(task.document, default_budget)
    try:
        # The row is written while the agent and tools the workflow starts with are read.
        execution, read = await asyncio.gather(
            store.create_execution(
                developer,
                (task.id, task.version),
                body_input,
                metadata,
                budget,
                idempotency_key,
                callback_url or task_callback_url(task),
            ),
            launch_reads(store, developer, task),
        )
    except Conflict:  # a concurrent request with the same key won the insert
        existing = await store.execution_by_key(developer, task.id, idempotency_key or "")
        if existing is None:
            raise
        return await _replayed(clients, settings, developer, task, existing, body_input)
    await launch(store, clients.temporal, settings, developer, task, execution, read=read)
    # Its workflow is started; the worker may already have moved the row on (that is what GET answers).
    return execution.moved_to("starting")


async def _by_key(clients: Clients, developer: str, task_id: str, key: str | None) -> Execution | None:
    """The execution an earlier request with this idempotency key started, if any."""
    if not key:
        return None
    return await clients.store.execution_by_key(developer, checked_id(task_id, "task"), key)


async def check_in_flight(clients: Clients, settings: Settings, developer: str) -> None:
    """Refused (TooMany) when the developer has as many executions in flight as allowed."""
    refuse_past_limit(settings, await clients.store.executions_in_flight(developer))


def refuse_past_limit(settings: Settings, in_flight: int) -> None:
    if in_flight >= settings.max_executions_in_flight:
        raise TooMany(
            f"{in_flight} executions are already in flight for this developer; the limit is "
            f"{settings.max_executions_in_flight} (MINT_MAX_EXECUTIONS_IN_FLIGHT): wait for some to end",
            retry_after=5,
        )


async def execution_budget(clients: Clients, developer: str, document: JsonObject) -> JsonObject | None:
    """The limits an execution runs within, fixed when it starts: the task's `budget`, else the developer's
    default (GET/PUT /developer/settings); None when neither sets one."""
    if document.get("budget") is not None:
        return limits(document, None)
    return await Budgets(clients.store.pool).default_budget(developer)


def limits(document: JsonObject, default: JsonObject | None) -> JsonObject | None:
    """The task's `budget`'s limits, else `default` (the developer's)."""
    if document.get("budget") is not None:
        return Budget.model_validate(document["budget"]).limits()
    return default


def check_storable(value: JsonValue, what: str) -> int:
    """The JSON size of `value`; NaN and Infinity are refused (JSON and Postgres cannot hold them)."""
    try:
        return len(json.dumps(value, allow_nan=False))
    except ValueError:
        raise Invalid(f"{what} contains NaN or Infinity, which JSON cannot hold") from None


async def check_input(document: JsonObject, body_input: JsonValue) -> None:
    size = check_storable(body_input, "input")
    if size > MAX_INPUT_BYTES:
        raise TooLarge(f"execution input is {size} bytes; the limit is {MAX_INPUT_BYTES}")
    schema = document.get("input_schema")
    if not isinstance(schema, dict):
        return
    # A big input against a schema takes a while, and the event loop serves everyone: a thread then.
    if size > INLINE_CHECK_BYTES:
        problems = await asyncio.to_thread(input_problems, schema, body_input)
    else:
        problems = input_problems(schema, body_input)
    if problems:
        summary = "; ".join(f"{p.path}: {p.message}" for p in problems[:5])
        raise Invalid(f"input does not match the task's input_schema: {summary}", problems=problems)


async def _replayed(
    clients: Clients,
    settings: Settings,
    developer: str,
    task: TaskVersion,
    existing: Execution,
    body_input: JsonValue,
) -> Execution:
    if existing.input != body_input:
        raise WrongState("this Idempotency-Key was already used with a different input")
    if existing.status == "queued":
        # The first request stopped between its insert and its start: finish the job (starts are idempotent),
        # with the task version that execution recorded.
        store = clients.store
        recorded = await store.get_task(developer, task.id, existing.task_version)
        await launch(store, clients.temporal, settings, developer, recorded or task, existing)
        existing = await store.get_execution(developer, existing.id) or existing
    return existing
