"""Sessions, their history, render and chat."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from api import schemas
from api.deps import ClientsDep, Developer, PageDep
from api.errors import ERROR_RESPONSES, ApiError
from api.warning_header import note
from contracts.records.sessions import HistoryEntry, Session
from services import sessions
from services.chat.chatter import Chatter
from services.chat.reply import ChatAnswer, Reply
from services.chat.session import ChatSession
from services.errors import ServiceError
from services.session_chat import render as render_chat

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
        "entries": [_entry_out(entry) for entry in found.entries],
        "relations": [],
        "created_at": found.created_at,
    }


def _entry_out(entry: HistoryEntry) -> dict[str, object]:
    """An entry as Julep answers it: its message's keys (unset ones null), its token count (cl100k_base's,
    services/chat/context.py) and `tokenizer`, and `timestamp`, Julep's name for when it was made, which its
    Entry requires."""
    message = entry.message
    return {
        "id": entry.id,
        "role": message["role"],
        "name": message.get("name"),
        "content": message.get("content"),
        "tool_calls": message.get("tool_calls"),
        "tool_call_id": message.get("tool_call_id"),
        "token_count": entry.token_count,
        "source": entry.source,
        "replaces": entry.replaces,
        "created_at": entry.created_at,
        "tokenizer": "cl100k_base",
        "timestamp": entry.created_at,
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
    session = ChatSession.of(await sessions.get(clients, developer, session_id))
    if body.remember:
        note("`remember` is ignored: Julep v1 did nothing with it either")
    reply = Reply()  # its id and time go in every chunk of a stream, as Julep's chunks carry them
    if not body.stream:
        answer = await _chatter(request).chat(developer, session, body, reply=reply)
        for name in sorted(reply.unsupported):
            note(f"`{name}` is not taken by the model's provider: left out of its request")
        return answer
    events: asyncio.Queue[_Event] = asyncio.Queue()

    async def on_text(index: int, text: str) -> None:
        await events.put(_Text(index, text))

    async def run() -> None:
        try:
            await events.put(_Answer(await _chatter(request).chat(developer, session, body, on_text, reply)))
        except Exception as exc:  # handed to the response: an HTTP error, or an error event mid-stream
            await events.put(_Failed(exc))

    # Kept to its end even if the client goes away, so the turn is saved whole.
    runner = asyncio.create_task(run())
    first = await events.get()
    # Nothing was streamed yet: a plain HTTP error (404, 409, 422, 502, ...). But an answer an output guardrail
    # refused was held back from the stream (services/chat/guardrails.py TextGate), which carries the refusal
    # alone, as it would after text that passed.
    if isinstance(first, _Failed) and not _refused_answer(first.error):
        raise first.error
    return StreamingResponse(_as_events(first, events, runner, reply), media_type="text/event-stream")


@dataclass(frozen=True)
class _Text:
    """Text a model wrote, as it wrote it, for the choice at `index`."""

    index: int
    text: str


@dataclass(frozen=True)
class _Answer:
    answer: ChatAnswer


@dataclass(frozen=True)
class _Failed:
    error: Exception


_Event = _Text | _Answer | _Failed


async def _as_events(
    first: _Event, events: asyncio.Queue[_Event], runner: asyncio.Task[None], reply: Reply
) -> AsyncIterator[str]:
    """Chat-completion chunks over SSE: the text as the models write it, then one closing chunk per choice
    with what was not streamed (tool calls), its finish reason, usage and docs. No [DONE]: Julep's SDK
    parses every event as JSON."""
    streamed: set[int] = set()
    head = {"id": str(reply.id), "created_at": reply.created_at.isoformat()}
    event = first
    while True:
        if isinstance(event, _Text):
            streamed.add(event.index)
            delta = {"role": "assistant", "content": event.text}
            yield _event({**head, "choices": [{"index": event.index, "delta": delta, "finish_reason": None}]})
        elif isinstance(event, _Failed):
            yield _event(_failure(event.error))
            return
        else:
            for chunk in _closing_chunks(event.answer, streamed):
                yield _event(chunk)
            await runner
            return
        event = await events.get()


def _failure(error: Exception) -> dict[str, object]:
    """The error event of a stream that failed after it started."""
    known = isinstance(error, ApiError | ServiceError)  # a failure worded for the caller
    if not known:
        log.error("a streamed chat failed", exc_info=error)
    message = error.message if isinstance(error, ApiError | ServiceError) else "the chat failed"
    # A failure of a named kind (a guardrail's refusal, say) says which, as its 4xx would.
    named = {"type": error.error_type} if isinstance(error, ServiceError) and error.error_type else {}
    return {"error": message, **named}


def _closing_chunks(answer: ChatAnswer, streamed: set[int]) -> list[dict[str, object]]:
    """One chunk per choice: what was not streamed of its message (all of it, for a choice not streamed),
    its finish reason and who answered, with the answer's usage and docs."""
    chunks: list[dict[str, object]] = []
    for choice in answer["choices"]:
        message: Mapping[str, object] = choice["message"]
        delta = {k: v for k, v in message.items() if k != "content" or choice["index"] not in streamed}
        chunk_choice = {
            "index": choice["index"],
            "delta": delta,
            "finish_reason": choice.get("finish_reason"),
            "agent_id": choice.get("agent_id"),  # who answered (a handoff may change it)
        }
        chunks.append(
            {
                "id": answer["id"],
                "created_at": answer["created_at"].isoformat(),
                "choices": [chunk_choice],
                "usage": answer["usage"],
                "docs": answer["docs"],
                "trace_id": answer["trace_id"],
            }
        )
    return chunks


def _refused_answer(exc: BaseException) -> bool:
    return isinstance(exc, ServiceError) and exc.error_type == "OutputGuardrailTripwire"


def _event(data: Mapping[str, object]) -> str:
    return f"data: {json.dumps(data, default=str)}\n\n"
