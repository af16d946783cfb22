"""Resuming an execution that waits for input, and cancelling one: a signal or a cancel to its workflow."""

from __future__ import annotations

from typing import Literal

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from contracts.executions import ResumeInput
from contracts.json import JsonValue
from contracts.records.executions import Execution
from contracts.temporal import RESUME_SIGNAL
from contracts.transitions import TERMINAL_STATUSES
from infra.store.tables import Store
from services.clients import Clients
from services.errors import TooLarge, Unavailable, WrongState
from services.executions.reads import execution_of
from services.executions.start import MAX_INPUT_BYTES, check_storable


async def change_status(
    clients: Clients,
    developer: str,
    execution_id: str,
    status: Literal["running", "cancelled"],
    value: JsonValue,
    reason: str | None,
) -> Execution:
    """`running` resumes the execution with `value`; `cancelled` cancels it (`reason` kept as its error).
    The execution as it is after."""
    execution = await execution_of(clients, developer, execution_id)
    if status == "running":
        await resume_execution(clients.store, clients.temporal, developer, execution, value)
    else:
        await cancel_execution(clients.store, clients.temporal, developer, execution, reason)
    return await execution_of(clients, developer, execution.id)


async def resume_execution(
    store: Store, temporal: Client, developer: str, execution: Execution, value: JsonValue
) -> None:
    """Answer the oldest unanswered wait; the workflow drops a resume for a wait that is no longer open."""
    if execution.status != "awaiting_input":
        raise WrongState(f"execution {execution.id} is {execution.status}, not awaiting_input")
    if check_storable(value, "input") > MAX_INPUT_BYTES:
        raise TooLarge(f"resume input is over {MAX_INPUT_BYTES} bytes")
    wait_seq = await store.open_wait(developer, execution.id)
    if wait_seq is None:
        raise WrongState(f"execution {execution.id} is not waiting for input")
    handle = temporal.get_workflow_handle(execution.id)
    try:
        await handle.signal(RESUME_SIGNAL, ResumeInput(wait_seq=wait_seq, input=value))
    except RPCError as exc:
        raise WrongState(f"execution {execution.id} cannot be resumed: {exc.message}") from None


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
