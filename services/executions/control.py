"""Resuming an execution that waits for input, and cancelling one: a signal or a cancel to its workflow."""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import Literal

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from contracts.executions import ResumeInput
from contracts.json import JsonObject, JsonValue
from contracts.records.executions import Execution, OpenWait
from contracts.temporal import RESUME_SIGNAL
from contracts.transitions import TERMINAL_STATUSES
from infra.store.tables import Store
from services.clients import Clients
from services.errors import Invalid, NotFound, TooLarge, Unavailable, WrongState
from services.executions.reads import execution_of, execution_with_waits
from services.executions.start import INLINE_CHECK_BYTES, MAX_INPUT_BYTES, check_storable
from services.ids import checked_id
from workflows.input_schema import input_problems
from workflows.problems import Problem


async def change_status(
    clients: Clients,
    developer: str,
    execution_id: str,
    status: Literal["running", "cancelled"],
    value: JsonValue,
    reason: str | None,
    wait_id: str | None = None,
) -> Execution:
    """`running` resumes the execution with `value` (answering wait `wait_id`, else the oldest open one);
    `cancelled` cancels it (`reason` kept as its error). The execution as it is after, with its open waits."""
    execution = await execution_of(clients, developer, execution_id)
    if status == "running":
        await resume_execution(clients.store, clients.temporal, developer, execution, value, wait_id)
    else:
        await cancel_execution(clients.store, clients.temporal, developer, execution, reason)
    return await execution_with_waits(clients, developer, execution.id)


async def resume_execution(
    store: Store,
    temporal: Client,
    developer: str,
    execution: Execution,
    value: JsonValue,
    wait_id: str | None = None,
) -> None:
    """Answer wait `wait_id` (else the oldest open one) with `value`, once it satisfies the wait's schema;
    the workflow drops a resume for a wait that is no longer open."""
    if execution.status != "awaiting_input":
        raise WrongState(f"execution {execution.id} is {execution.status}, not awaiting_input")
    size = check_storable(value, "input")
    if size > MAX_INPUT_BYTES:
        raise TooLarge(f"resume input is over {MAX_INPUT_BYTES} bytes")
    wait = await _open_wait(store, developer, execution, wait_id)
    problems = await _schema_problems(wait.schema, value, size)
    if problems:
        summary = "; ".join(f"{p.path}: {p.message}" for p in problems[:5])
        raise Invalid(
            f"input does not satisfy the schema of wait {wait.id} ({wait.step}); it is still open: {summary}",
            problems=problems,
        )
    handle = temporal.get_workflow_handle(execution.id)
    answer = ResumeInput(wait_seq=wait.seq, input=value, exact=wait_id is not None)
    try:
        await handle.signal(RESUME_SIGNAL, answer)
    except RPCError as exc:
        raise WrongState(f"execution {execution.id} cannot be resumed: {exc.message}") from None


async def _schema_problems(schema: JsonObject | None, value: JsonValue, size: int) -> list[Problem]:
    if schema is None:
        return []
    # A big input against a schema takes a while, and the event loop serves everyone: a thread then.
    if size > INLINE_CHECK_BYTES:
        return await asyncio.to_thread(input_problems, schema, value)
    return input_problems(schema, value)


async def _open_wait(store: Store, developer: str, execution: Execution, wait_id: str | None) -> OpenWait:
    """The open wait `wait_id` names, else the oldest. A `wait_id` that names no wait of this execution is a
    NotFound (404); one that names a wait already answered (or timed out) is a WrongState (409)."""
    waits = await store.open_waits(developer, execution.id)
    if not waits:
        raise WrongState(f"execution {execution.id} is not waiting for input")
    if wait_id is None:
        return waits[0]
    for wait in waits:
        if wait.id == wait_id:
            return wait
    found = None
    with suppress(NotFound):
        found = await store.get_transition(developer, execution.id, checked_id(wait_id, "wait"))
    if found is None or found.type != "wait":
        listed = ", ".join(w.id for w in waits)
        raise NotFound(
            "wait", wait_id, f"execution {execution.id} has no such wait; its open waits: {listed}"
        )
    raise WrongState(f"wait {wait_id} of execution {execution.id} was already answered")


async def cancel_execution(
    store: Store, temporal: Client, developer: str, execution: Execution, reason: str | None
) -> None:
    if execution.status in TERMINAL_STATUSES:
        raise WrongState(f"execution {execution.id} already ended ({execution.status})")
    try:
        await temporal.get_workflow_handle(execution.id).cancel()
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise Unavailable(f"could not cancel execution {execution.id}: {exc.message}") from None
        # No workflow (its start failed): nothing runs, so the row is the whole truth.
        await store.set_execution_status(developer, execution.id, "cancelled", ("queued", "starting"))
    if reason:
        await store.note_cancel_reason(developer, execution.id, reason)
