"""Executions, their transitions, and the SSE streams of both."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import StreamingResponse

from api import schemas
from api.deps import Developer, PageDep, StoreDep, TransitionPageDep, checked_id
from api.errors import ERROR_RESPONSES, not_found
from api.executions import cancel_execution, resume_execution, start_execution
from api.restarts import restart_execution
from api.timers import open_timers
from contracts.transitions import TERMINAL_STATUSES, TERMINAL_TYPES
from infra.store.execution_events import ExecutionEvents
from infra.store.tables import EXECUTIONS, Store
from infra.telemetry.traces import build_trace

router = APIRouter(tags=["executions"], responses=ERROR_RESPONSES)
# A quiet stream sends a keep-alive this often. Streams wait for a change of their execution (pushed by
# Postgres: infra/store/execution_events.py), not on a timer, and read at most this many transitions at once.
KEEPALIVE_SECONDS = 15.0
READ_BATCH = 500


@router.post("/tasks/{task_id}/executions", status_code=201, response_model=schemas.Execution)
async def create_execution(
    task_id: str,
    body: schemas.ExecutionCreate,
    request: Request,
    developer: Developer,
    store: StoreDep,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> Any:
    """Start an execution; the same `Idempotency-Key` returns the same execution."""
    task = await store.get_task(developer, checked_id(task_id, "task"))
    if task is None:
        raise not_found("task", task_id)
    state = request.app.state
    return await start_execution(
        store,
        state.temporal,
        state.settings,
        developer,
        task,
        body.input,
        body.metadata or {},
        idempotency_key,
    )


@router.get("/tasks/{task_id}/executions", response_model=schemas.ItemList[schemas.Execution])
async def list_executions(task_id: str, developer: Developer, store: StoreDep, page: PageDep) -> Any:
    task = await store.get_task(developer, checked_id(task_id, "task"))
    if task is None:
        raise not_found("task", task_id)
    return {"items": await store.find(EXECUTIONS, developer, page, parent_id=task["id"])}


ExecutionStatus = Literal[
    "queued", "starting", "running", "awaiting_input", "succeeded", "failed", "cancelled"
]


@router.get("/executions", response_model=schemas.ItemList[schemas.ExecutionListed])
async def list_all_executions(
    developer: Developer, store: StoreDep, page: PageDep, status: ExecutionStatus | None = None
) -> Any:
    """The caller's executions across all tasks (newest first unless `direction=asc`), each with its task's
    name; `status` keeps those of one status."""
    return {"items": await store.list_executions(developer, page, status)}


@router.get("/executions/{execution_id}/timers", response_model=schemas.ItemList[schemas.Timer])
async def list_timers(execution_id: str, request: Request, developer: Developer, store: StoreDep) -> Any:
    """The execution's open timers, soonest first: when its sleeps wake and its waits time out (`sleep`
    writes its transition only when it ends)."""
    execution = await execution_or_404(store, developer, execution_id)
    if execution["status"] in TERMINAL_STATUSES:
        return {"items": []}
    return {"items": await open_timers(request.app.state.temporal, execution["id"])}


@router.get("/executions/{execution_id}", response_model=schemas.Execution)
async def get_execution(execution_id: str, developer: Developer, store: StoreDep) -> Any:
    return await execution_or_404(store, developer, execution_id)


@router.put("/executions/{execution_id}", response_model=schemas.Execution)
async def change_status(
    execution_id: str, body: schemas.ExecutionChange, request: Request, developer: Developer, store: StoreDep
) -> Any:
    """`{"status": "running", "input": ...}` resumes; `{"status": "cancelled"}` cancels."""
    execution = await execution_or_404(store, developer, execution_id)
    temporal = request.app.state.temporal
    if body.status == "running":
        await resume_execution(store, temporal, developer, execution, body.input)
    else:
        await cancel_execution(store, temporal, developer, execution, body.reason)
    return await store.get(EXECUTIONS, developer, execution["id"])


@router.post("/executions/{execution_id}/restart", status_code=201, response_model=schemas.Execution)
async def restart(
    execution_id: str, body: schemas.ExecutionRestart, request: Request, developer: Developer, store: StoreDep
) -> Any:
    """A new execution that keeps the transitions before `from_transition`'s step and runs again from there
    (with `input` as that step's input, if given), linked by `restarted_from`."""
    execution = await execution_or_404(store, developer, execution_id)
    state = request.app.state
    return await restart_execution(
        store,
        state.temporal,
        state.settings,
        developer,
        execution,
        checked_id(body.from_transition, "transition"),
        body.input,
        "input" in body.model_fields_set,
    )


@router.get("/executions/{execution_id}/transitions", response_model=schemas.ItemList[schemas.Transition])
async def list_transitions(
    execution_id: str,
    developer: Developer,
    store: StoreDep,
    page: TransitionPageDep,
    scope_id: str | None = None,
) -> Any:
    execution = await execution_or_404(store, developer, execution_id)
    return {
        "items": [
            transition_out(t)
            for t in await store.list_transitions(developer, execution["id"], page, scope_id=scope_id)
        ]
    }


@router.get("/executions/{execution_id}/trace", response_model=schemas.Trace)
async def get_trace(execution_id: str, developer: Developer, store: StoreDep) -> Any:
    """The execution's trace: runs, steps, model and tool calls, handoffs and guardrails, in order, under one
    trace id (built from its transitions: infra/telemetry/traces.py)."""
    execution = await execution_or_404(store, developer, execution_id)
    return build_trace(execution, await store.all_transitions(developer, execution["id"]))


@router.get(
    "/executions/{execution_id}/transitions.stream",
    # StreamingResponse (no media type of its own) keeps FastAPI from also declaring a JSON 200.
    response_class=StreamingResponse,
    responses=schemas.event_stream(
        {"$ref": "#/components/schemas/Transition"}, "One `transition` event per transition"
    ),
)
async def stream_transitions(
    execution_id: str,
    request: Request,
    developer: Developer,
    store: StoreDep,
    next_page_token: str | None = Query(default=None),
) -> StreamingResponse:
    """SSE: one `transition` event per transition (id = its sequence number), ending after the last one."""
    execution = await execution_or_404(store, developer, execution_id)
    after = _resume_point(request.headers.get("last-event-id") or next_page_token)
    events = request.app.state.execution_events
    return _sse(_transition_events(store, events, developer, execution["id"], after, request))


@router.get(
    "/executions/{execution_id}/status.stream",
    response_class=StreamingResponse,
    responses=schemas.event_stream(
        {"$ref": "#/components/schemas/Execution"}, "The execution, each time it changes"
    ),
)
async def stream_status(
    execution_id: str, request: Request, developer: Developer, store: StoreDep
) -> StreamingResponse:
    """SSE: the execution each time its status or transition count changes, ending when it ends."""
    execution = await execution_or_404(store, developer, execution_id)
    seen = _resume_point(request.headers.get("last-event-id"))
    events = request.app.state.execution_events
    return _sse(_status_events(store, events, developer, execution["id"], seen, request))


@router.get("/executions/{execution_id}/transitions/{transition_id}", response_model=schemas.Transition)
async def get_transition(execution_id: str, transition_id: str, developer: Developer, store: StoreDep) -> Any:
    execution = await execution_or_404(store, developer, execution_id)
    transition = await store.get_transition(
        developer, execution["id"], checked_id(transition_id, "transition")
    )
    if transition is None:
        raise not_found("transition", transition_id)
    return transition_out(transition)


# Helpers -----------------------------------------------------------------------------------------------------


async def execution_or_404(store: Store, developer: str, execution_id: str) -> dict[str, Any]:
    execution = await store.get(EXECUTIONS, developer, checked_id(execution_id, "execution"))
    if execution is None:
        raise not_found("execution", execution_id)
    return execution


def transition_out(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "updated_at": row["created_at"]}


MAX_SEQ = 2**31 - 1  # transitions.seq is a Postgres integer


def _resume_point(value: str | None) -> int:
    try:
        return min(max(int(value or 0), 0), MAX_SEQ)
    except ValueError:
        return 0


def _sse(events: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(
        events,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _event(data: Any, event_id: int, event: str | None = None) -> str:
    head = f"id: {event_id}\n" + (f"event: {event}\n" if event else "")
    return head + "data: " + json.dumps(jsonable_encoder(data), separators=(",", ":")) + "\n\n"


async def _transition_events(
    store: Store, events: ExecutionEvents, developer: str, execution_id: str, after: int, request: Request
) -> AsyncIterator[str]:
    loop = asyncio.get_running_loop()
    with events.watch(execution_id) as watch:  # before the first read: a change made after it wakes the watch
        keepalive_at = loop.time() + KEEPALIVE_SECONDS
        while not await request.is_disconnected():
            status, batch = await store.transitions_after(developer, execution_id, after, READ_BATCH)
            for row in batch:
                after = row["seq"]
                yield _event(schemas.Transition.model_validate(transition_out(row)), row["seq"], "transition")
                if row["type"] in TERMINAL_TYPES:
                    return
            if batch:
                keepalive_at = loop.time() + KEEPALIVE_SECONDS
            if len(batch) == READ_BATCH:
                continue  # the rest of a long run, at once
            # An execution's status changes in the transaction that writes its transitions, and was read in the
            # same snapshot: ended then, it has no more to come (a resume point past its end, or one that failed
            # without an ending transition). Without this check such a stream would never end.
            if status is None or status in TERMINAL_STATUSES:
                return
            while not await watch.wait_until(keepalive_at):
                keepalive_at = loop.time() + KEEPALIVE_SECONDS
                yield ": keepalive\n\n"


async def _status_events(
    store: Store, events: ExecutionEvents, developer: str, execution_id: str, seen: int, request: Request
) -> AsyncIterator[str]:
    # No comment keep-alives here: the julep SDK parses every blank-line-terminated block as JSON once an
    # `id:` was sent, so keep-alives re-send the current state instead (as last read: had it changed since,
    # the watch would have woken).
    loop = asyncio.get_running_loop()
    with events.watch(execution_id) as watch:
        first, woke = True, True
        keepalive_at = loop.time() + KEEPALIVE_SECONDS
        execution: dict[str, Any] | None = None
        while not await request.is_disconnected():
            if woke or execution is None:
                execution = await store.get(EXECUTIONS, developer, execution_id)
                if execution is None:
                    return
            count = execution["transition_count"]
            if count != seen or (first and not seen) or not woke:  # changed, first, or a keep-alive
                seen, keepalive_at = count, loop.time() + KEEPALIVE_SECONDS
                yield _event(schemas.Execution.model_validate(execution), seen)
            first = False
            if execution["status"] in TERMINAL_STATUSES:
                return
            woke = await watch.wait_until(keepalive_at)
