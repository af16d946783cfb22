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
from api.deps import Developer, PageDep, StoreDep, checked_id
from api.errors import ERROR_RESPONSES, ApiError, not_found
from api.warning_header import note
from infra.store.session_history import SessionHistory
from infra.store.tables import AGENTS, SESSIONS, Store
from services.chat.chatter import Chatter, Reply
from services.errors import ServiceError
from services.sessions import participants

log = logging.getLogger(__name__)
router = APIRouter(tags=["sessions"], responses=ERROR_RESPONSES)


async def session_or_404(store: Store, developer: str, session_id: str) -> dict[str, Any]:
    session = await store.get(SESSIONS, developer, checked_id(session_id, "session"))
    if session is None:
        raise not_found("session", session_id)
    return session


def _values(
    body: schemas.SessionCreate | schemas.SessionPatch, who: dict[str, list[str]] | None
) -> dict[str, Any]:
    values = body.model_dump(exclude_unset=True, exclude={"agent", "agents", "user", "users"})
    if who is not None:
        values.update(who)
    if "metadata" in values and values["metadata"] is None:
        values["metadata"] = {}
    return values


def _named(body: schemas.SessionCreate) -> tuple[list[str], list[str]]:
    """The agents and the users a body names, in `agent` and `agents`, `user` and `users`."""
    agents = ([body.agent] if body.agent else []) + (body.agents or [])
    users = ([body.user] if body.user else []) + (body.users or [])
    return agents, users


async def _who(
    store: Store, developer: str, body: schemas.SessionCreate, session: dict[str, Any]
) -> dict[str, list[str]] | None:
    """The participants a change names (None: none named, the session keeps its own); naming only users (or
    only agents) keeps the other side as it was."""
    agents, users = _named(body)
    if not agents and not users:
        return None
    return await participants(store, developer, agents or session["agents"], users or session["users"])


def _chatter(request: Request) -> Chatter:
    return request.app.state.chatter


def _history(store: Store) -> SessionHistory:
    return SessionHistory(store.pool)


@router.post("/sessions", status_code=201, response_model=schemas.Session)
async def create_session(body: schemas.SessionCreate, developer: Developer, store: StoreDep) -> Any:
    return await store.insert(
        SESSIONS, developer, _values(body, await participants(store, developer, *_named(body)))
    )


@router.get("/sessions", response_model=schemas.ItemList[schemas.Session])
async def list_sessions(developer: Developer, store: StoreDep, page: PageDep) -> Any:
    return {"items": await store.find(SESSIONS, developer, page)}


@router.get("/sessions/{session_id}", response_model=schemas.Session)
async def get_session(session_id: str, developer: Developer, store: StoreDep) -> Any:
    return await session_or_404(store, developer, session_id)


@router.post("/sessions/{session_id}", status_code=201, response_model=schemas.Session)
async def create_or_update_session(
    session_id: str, body: schemas.SessionCreate, developer: Developer, store: StoreDep
) -> Any:
    session_id = checked_id(session_id, "session")
    values = _values(body, await participants(store, developer, *_named(body)))
    updated = await store.update(SESSIONS, developer, session_id, values)
    return updated or await store.insert(SESSIONS, developer, values, id_=session_id)


@router.put("/sessions/{session_id}", response_model=schemas.Session)
async def reset_session(
    session_id: str, body: schemas.SessionCreate, developer: Developer, store: StoreDep
) -> Any:
    session = await session_or_404(store, developer, session_id)
    # Julep's update names no participants (the SDK's sessions.reset sends none): the session keeps its own.
    # Mint's may name them, and then they are replaced (one side named alone: the other kept, as in a patch).
    return await store.update(
        SESSIONS, developer, session["id"], _values(body, await _who(store, developer, body, session))
    )


@router.patch("/sessions/{session_id}", response_model=schemas.Session)
async def patch_session(
    session_id: str, body: schemas.SessionPatch, developer: Developer, store: StoreDep
) -> Any:
    session = await session_or_404(store, developer, session_id)
    values = _values(body, await _who(store, developer, body, session))
    if "metadata" in values:
        values["metadata"] = {**session["metadata"], **values["metadata"]}
    return await store.update(SESSIONS, developer, session["id"], values)


@router.delete("/sessions/{session_id}", status_code=202, response_model=schemas.ResourceDeleted)
async def delete_session(session_id: str, developer: Developer, store: StoreDep) -> Any:
    if not await store.delete(SESSIONS, developer, checked_id(session_id, "session")):
        raise not_found("session", session_id)
    return {"id": session_id, "deleted_at": datetime.now(UTC)}


@router.get("/sessions/{session_id}/history")
async def get_history(session_id: str, developer: Developer, store: StoreDep) -> Any:
    session = await session_or_404(store, developer, session_id)
    # Token counts are cl100k_base's (services/chat/context.py); `timestamp`, Julep's name for when an entry
    # was made, is required by its Entry.
    entries = [
        {**e, "tokenizer": "cl100k_base", "timestamp": e["created_at"]}
        for e in await _history(store).entries(developer, session["id"])
    ]
    return {
        "session_id": session["id"],
        "entries": entries,
        "relations": [],
        "created_at": session["created_at"],
    }


@router.delete("/sessions/{session_id}/history", status_code=202, response_model=schemas.ResourceDeleted)
async def delete_history(session_id: str, developer: Developer, store: StoreDep) -> Any:
    session = await session_or_404(store, developer, session_id)
    await _history(store).clear(developer, session["id"])
    await store.update(SESSIONS, developer, session["id"], {"summary": None})
    return {"id": session["id"], "deleted_at": datetime.now(UTC)}


@router.post("/sessions/{session_id}/render")
async def render(
    session_id: str, body: schemas.Chat, developer: Developer, store: StoreDep, request: Request
) -> Any:
    """The exact messages a chat with this body would send, without sending them."""
    session = await session_or_404(store, developer, session_id)
    chatter = _chatter(request)
    agent_id = body.agent or session["agents"][0]
    agent = await store.get(AGENTS, developer, checked_id(agent_id, "agent"))
    if agent is None:
        raise not_found("agent", agent_id)
    cast = await chatter.cast(developer, session, agent, body)
    context, docs = await chatter.prepare(developer, session, body, cast)
    # Julep's render answers the tools the model would be offered too (its transfer tools aside).
    return {
        "messages": context.messages,
        "tools": cast.offered_tools(),
        "docs": docs,
        "dropped": context.dropped,
    }


@router.post(
    "/sessions/{session_id}/chat",
    status_code=201,
    responses=schemas.event_stream(
        {"type": "object"}, "The answer: JSON, or chat-completion chunks over SSE with `stream: true`"
    ),
)
async def chat(
    session_id: str, body: schemas.Chat, developer: Developer, store: StoreDep, request: Request
) -> Any:
    session = await session_or_404(store, developer, session_id)
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
    first: tuple[str, Any], events: asyncio.Queue[tuple[str, Any]], runner: asyncio.Task, reply: Reply
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
