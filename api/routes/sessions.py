"""Sessions, their history, render and chat."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from api import schemas
from api.deps import ClientsDep, Developer, PageDep
from api.errors import ERROR_RESPONSES, ApiError
from api.warning_header import note
from services import sessions
from services.chat.chatter import Chatter, Reply
from services.chat.session import ChatSession
from services.errors import ServiceError
from services.session_chat import render as render_chat
from services.sessions import Session

log = logging.getLogger(__name__)
router = APIRouter(tags=["sessions"], responses=ERROR_RESPONSES)


def _chatter(request: Request) -> Chatter:
    chatter: Chatter = request.app.state.chatter
    return chatter


@router.post("/sessions", status_code=201, response_model=schemas.Session)
async def create_session(body: schemas.SessionCreate, developer: Developer, clients: ClientsDep) -> Session:
    return await sessions.create(clients, developer, body.participants(), body.change())


@router.get("/sessions", response_model=schemas.ItemList[schemas.Session])
async def list_sessions(developer: Developer, clients: ClientsDep, page: PageDep) -> dict[str, list[Session]]:
    return {"items": await sessions.find(clients, developer, page)}


@router.get("/sessions/{session_id}", response_model=schemas.Session)
async def get_session(session_id: str, developer: Developer, clients: ClientsDep) -> Session:
    return await sessions.get(clients, developer, session_id)


@router.post("/sessions/{session_id}", status_code=201, response_model=schemas.Session)
async def create_or_update_session(
    session_id: str, body: schemas.SessionCreate, developer: Developer, clients: ClientsDep
) -> Session:
    return await sessions.create_or_update(clients, developer, session_id, body.participants(), body.change())


@router.put("/sessions/{session_id}", response_model=schemas.Session)
async def reset_session(
    session_id: str, body: schemas.SessionCreate, developer: Developer, clients: ClientsDep
) -> Session:
    return await sessions.reset(clients, developer, session_id, body.participants(), body.change())


@router.patch("/sessions/{session_id}", response_model=schemas.Session)
async def patch_session(
    session_id: str, body: schemas.SessionPatch, developer: Developer, clients: ClientsDep
) -> Session:
    return await sessions.patch(clients, developer, session_id, body.participants(), body.change())


@router.delete("/sessions/{session_id}", status_code=202, response_model=schemas.ResourceDeleted)
async def delete_session(
    session_id: str, developer: Developer, clients: ClientsDep
) -> schemas.ResourceDeleted:
    await sessions.delete(clients, developer, session_id)
    return schemas.ResourceDeleted(id=session_id, deleted_at=datetime.now(UTC))


@router.get("/sessions/{session_id}/history")
async def get_history(session_id: str, developer: Developer, clients: ClientsDep) -> Any:
    found = await sessions.history(clients, developer, session_id)
    return {
        "session_id": found.session_id,
        "entries": found.entries,
        "relations": [],
        "created_at": found.created_at,
    }


@router.delete("/sessions/{session_id}/history", status_code=202, response_model=schemas.ResourceDeleted)
async def delete_history(
    session_id: str, developer: Developer, clients: ClientsDep
) -> schemas.ResourceDeleted:
    cleared = await sessions.clear_history(clients, developer, session_id)
    return schemas.ResourceDeleted(id=cleared, deleted_at=datetime.now(UTC))


@router.post("/sessions/{session_id}/render")
async def render(
    session_id: str, body: schemas.Chat, developer: Developer, clients: ClientsDep, request: Request
) -> Any:
    """The exact messages a chat with this body would send, without sending them."""
    rendered = await render_chat(clients, _chatter(request), developer, session_id, body)
    # Julep's render answers the tools the model would be offered too (its transfer tools aside).
    return {
        "messages": rendered.messages,
        "tools": rendered.tools,
        "docs": rendered.docs,
        "dropped": rendered.dropped,
    }


@router.post(
    "/sessions/{session_id}/chat",
    status_code=201,
    responses=schemas.event_stream(
        {"type": "object"}, "The answer: JSON, or chat-completion chunks over SSE with `stream: true`"
    ),
)
async def chat(
    session_id: str, body: schemas.Chat, developer: Developer, clients: ClientsDep, request: Request
) -> Any:
    session = ChatSession.of(await sessions.session_row(clients, developer, session_id))
    if body.remember:
        note("`remember` is ignored: Julep v1 did nothing with it either")
    reply = Reply()  # its id and time go in every chunk of a stream, as Julep's chunks carry them
    if not body.stream:
        answer = await _chatter(request).chat(developer, session, body, reply=reply)
        for name in sorted(reply.unsupported):
            note(f"`{name}` is not taken by the model's provider: left out of its request")
        return answer
    events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    async def on_text(index: int, text: str) -> None:
        await events.put(("text", (index, text)))

    async def run() -> None:
        try:
            await events.put(
                ("answer", await _chatter(request).chat(developer, session, body, on_text, reply))
            )
        except Exception as exc:  # handed to the response: an HTTP error, or an error event mid-stream
            await events.put(("error", exc))

    # Kept to its end even if the client goes away, so the turn is saved whole.
    runner = asyncio.create_task(run())
    first = await events.get()
    # Nothing was streamed yet: a plain HTTP error (404, 409, 422, 502, ...). But an answer an output guardrail
    # refused was held back from the stream (services/chat/guardrails.py TextGate), which carries the refusal
    # alone, as it would after text that passed.
    if first[0] == "error" and not _refused_answer(first[1]):
        raise first[1]
    return StreamingResponse(_as_events(first, events, runner, reply), media_type="text/event-stream")


async def _as_events(
    first: tuple[str, Any], events: asyncio.Queue[tuple[str, Any]], runner: asyncio.Task[None], reply: Reply
) -> AsyncIterator[str]:
    """Chat-completion chunks over SSE: the text as the models write it, then one closing chunk per choice
    with what was not streamed (tool calls), its finish reason, usage and docs. No [DONE]: Julep's SDK
    parses every event as JSON."""
    streamed: set[int] = set()
    head = {"id": str(reply.id), "created_at": reply.created_at.isoformat()}
    event = first
    while True:
        kind, value = event
        if kind == "text":
            index, text = value
            streamed.add(index)
            delta = {"role": "assistant", "content": text}
            yield _event({**head, "choices": [{"index": index, "delta": delta, "finish_reason": None}]})
        elif kind == "error":
            known = isinstance(value, ApiError | ServiceError)  # a failure worded for the caller
            if not known:
                log.error("a streamed chat failed", exc_info=value)
            # A failure of a named kind (a guardrail's refusal, say) says which, as its 4xx would.
            named = {"type": value.error_type} if isinstance(value, ServiceError) and value.error_type else {}
            yield _event({"error": value.message if known else "the chat failed", **named})
            return
        else:
            for choice in value["choices"]:
                delta = choice["message"]
                if choice["index"] in streamed:
                    delta = {k: v for k, v in delta.items() if k != "content"}
                chunk = {
                    "id": value["id"],
                    "created_at": value["created_at"].isoformat(),
                    "choices": [
                        {
                            "index": choice["index"],
                            "delta": delta,
                            "finish_reason": choice.get("finish_reason"),
                            "agent_id": choice.get("agent_id"),  # who answered (a handoff may change it)
                        }
                    ],
                    "usage": value["usage"],
                    "docs": value["docs"],
                    "trace_id": value["trace_id"],
                }
                yield _event(chunk)
            await runner
            return
        event = await events.get()


def _refused_answer(exc: BaseException) -> bool:
    return isinstance(exc, ServiceError) and exc.error_type == "OutputGuardrailTripwire"


def _event(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, default=str)}\n\n"
