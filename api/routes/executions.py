"""Executions, their transitions, and the SSE streams of both (services/executions/)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from api import schemas
from api.deps import ClientsDep, Developer, PageDep, TransitionPageDep
from api.errors import ERROR_RESPONSES
from contracts.records.executions import Execution, Transition
from services.executions import reads
from services.executions.control import change_status as change
from services.executions.deltas import Delta
from services.executions.feeds import status_feed, transition_feed
from services.executions.restarts import restart_execution
from services.executions.start import start_execution
from services.executions.timers import Timer, execution_timers

router = APIRouter(tags=["executions"], responses=ERROR_RESPONSES)


@router.post("/tasks/{task_id}/executions", status_code=201, response_model=schemas.Execution)
async def create_execution(
    task_id: str,
    body: schemas.ExecutionCreate,
    request: Request,
    developer: Developer,
    clients: ClientsDep,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> Execution:
    """Start an execution; the same `Idempotency-Key` returns the same execution."""
    settings = request.app.state.settings
    metadata = body.metadata or {}
    url = body.callback_url
    return await start_execution(
        clients, settings, developer, task_id, body.input, metadata, idempotency_key, callback_url=url
    )


@router.get("/tasks/{task_id}/executions", response_model=schemas.ItemList[schemas.Execution])
async def list_executions(
    task_id: str, developer: Developer, clients: ClientsDep, page: PageDep
) -> dict[str, list[Execution]]:
    return {"items": await reads.task_executions(clients, developer, task_id, page)}


ExecutionStatus = Literal[
    "queued", "starting", "running", "awaiting_input", "succeeded", "failed", "cancelled"
]


@router.get("/executions", response_model=schemas.ItemList[schemas.ExecutionListed])
async def list_all_executions(
    developer: Developer, clients: ClientsDep, page: PageDep, status: ExecutionStatus | None = None
) -> dict[str, list[Execution]]:
    """The caller's executions across all tasks (newest first unless `direction=asc`), each with its task's
    name; `status` keeps those of one status."""
    return {"items": await reads.all_executions(clients, developer, page, status)}


@router.get("/executions/{execution_id}/timers", response_model=schemas.ItemList[schemas.Timer])
async def list_timers(execution_id: str, developer: Developer, clients: ClientsDep) -> dict[str, list[Timer]]:
    """The execution's open timers, soonest first: when its sleeps wake and its waits time out (`sleep`
    writes its transition only when it ends)."""
    timers = await execution_timers(clients, developer, execution_id)
    return {"items": timers}


@router.get("/executions/{execution_id}", response_model=schemas.Execution)
async def get_execution(execution_id: str, developer: Developer, clients: ClientsDep) -> Execution:
    """The execution, with its open waits."""
    return await reads.execution_with_waits(clients, developer, execution_id)


@router.put("/executions/{execution_id}", response_model=schemas.Execution)
async def change_status(
    execution_id: str, body: schemas.ExecutionChange, developer: Developer, clients: ClientsDep
) -> Execution:
    """`{"status": "running", "input": ...}` resumes (the wait `wait_id` names, else the oldest: 422 if the
    input does not satisfy its schema, 404 if `wait_id` names no wait of the execution, 409 if that wait was
    already answered); `{"status": "cancelled"}` cancels."""
    return await change(clients, developer, execution_id, body.status, body.input, body.reason, body.wait_id)


@router.post("/executions/{execution_id}/restart", status_code=201, response_model=schemas.Execution)
async def restart(
    execution_id: str,
    body: schemas.ExecutionRestart,
    request: Request,
    developer: Developer,
    clients: ClientsDep,
) -> Execution:
    """A new execution that keeps the transitions before `from_transition`'s step and runs again from there
    (with `input` as that step's input, if given), linked by `restarted_from`."""
    has_input = "input" in body.model_fields_set
    settings = request.app.state.settings
    return await restart_execution(
        clients, settings, developer, execution_id, body.from_transition, body.input, has_input
    )


@router.get("/executions/{execution_id}/transitions", response_model=schemas.ItemList[schemas.Transition])
async def list_transitions(
    execution_id: str,
    developer: Developer,
    clients: ClientsDep,
    page: TransitionPageDep,
    scope_id: str | None = None,
) -> dict[str, list[Transition]]:
    found = await reads.transitions(clients, developer, execution_id, page, scope_id)
    return {"items": found}


@router.get("/executions/{execution_id}/trace", response_model=schemas.Trace)
async def get_trace(execution_id: str, developer: Developer, clients: ClientsDep) -> schemas.Trace:
    """The execution's trace: runs, steps, model and tool calls, handoffs and guardrails, in order, under one
    trace id (built from its transitions: infra/telemetry/traces.py)."""
    return schemas.Trace.model_validate(await reads.trace(clients, developer, execution_id))


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
    clients: ClientsDep,
    next_page_token: str | None = Query(default=None),
) -> StreamingResponse:
    """SSE: one `transition` event per transition (id = its sequence number), ending after the last one;
    between them, `delta` events (no id) carry the live text of prompt steps with `stream: true`."""
    execution = await reads.execution_of(clients, developer, execution_id)
    after = _resume_point(request.headers.get("last-event-id") or next_page_token)
    feed = transition_feed(clients, developer, execution.id, after, request.is_disconnected)
    return _sse(_transition_events(feed))


@router.get(
    "/executions/{execution_id}/status.stream",
    response_class=StreamingResponse,
    responses=schemas.event_stream(
        {"$ref": "#/components/schemas/Execution"}, "The execution, each time it changes"
    ),
)
async def stream_status(
    execution_id: str, request: Request, developer: Developer, clients: ClientsDep
) -> StreamingResponse:
    """SSE: the execution each time its status or transition count changes, ending when it ends."""
    execution = await reads.execution_of(clients, developer, execution_id)
    seen = _resume_point(request.headers.get("last-event-id"))
    feed = status_feed(clients, developer, execution.id, seen, request.is_disconnected)
    return _sse(_status_events(feed))


@router.get("/executions/{execution_id}/transitions/{transition_id}", response_model=schemas.Transition)
async def get_transition(
    execution_id: str, transition_id: str, developer: Developer, clients: ClientsDep
) -> Transition:
    return await reads.transition(clients, developer, execution_id, transition_id)


# Helpers -----------------------------------------------------------------------------------------------------

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


def _event(data: BaseModel, event_id: int, event: str | None = None) -> str:
    head = f"id: {event_id}\n" + (f"event: {event}\n" if event else "")
    return head + "data: " + json.dumps(jsonable_encoder(data), separators=(",", ":")) + "\n\n"


async def _transition_events(feed: AsyncIterator[Transition | Delta | None]) -> AsyncIterator[str]:
    async for transition in feed:
        if transition is None:
            yield ": keepalive\n\n"
        elif isinstance(transition, Delta):  # live text: not a transition, so no `id:` to resume from
            data = json.dumps({"step": transition.step, "text": transition.text}, separators=(",", ":"))
            yield f"event: delta\ndata: {data}\n\n"
        else:
            out = schemas.Transition.model_validate(transition, from_attributes=True)
            yield _event(out, transition.seq, "transition")


async def _status_events(feed: AsyncIterator[Execution]) -> AsyncIterator[str]:
    async for execution in feed:
        yield _event(
            schemas.Execution.model_validate(execution, from_attributes=True), execution.transition_count
        )
