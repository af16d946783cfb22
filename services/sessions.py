"""Sessions: who takes part in one (checked to be the caller's), and the session itself, created, read,
changed and deleted, with its history."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from typing_extensions import TypedDict

from contracts.json import JsonObject
from contracts.records.pages import Page
from contracts.records.sessions import HistoryEntry, Session
from infra.store.session_history import SessionHistory
from infra.store.tables import AGENTS, SESSIONS, USERS, Store, Table
from services.clients import Clients
from services.errors import Invalid, NotFound
from services.ids import checked_id

R = TypeVar("R")


async def owned(store: Store, table: Table[R], developer: str, id_: str) -> R | None:
    """The developer's record with this id, or None (an id that is no UUID names none)."""
    try:
        return await store.get(table, developer, str(uuid.UUID(id_)))
    except ValueError:
        return None


@dataclass(frozen=True)
class Participants:
    agents: list[str]
    users: list[str]


async def participants(store: Store, developer: str, agents: list[str], users: list[str]) -> Participants:
    """The session's agents and users, each checked to be the caller's (NotFound otherwise), without
    repeats."""
    if not agents:
        raise Invalid("a session needs at least one agent (`agent` or `agents`)")
    for id_ in agents:
        if await owned(store, AGENTS, developer, id_) is None:
            raise NotFound("agent", id_)
    for id_ in users:
        if await owned(store, USERS, developer, id_) is None:
            raise NotFound("user", id_)
    return Participants(list(dict.fromkeys(agents)), list(dict.fromkeys(users)))


class SessionChange(TypedDict, total=False):
    """What a request gives a session besides its participants (a key left out is left as it is)."""

    situation: str | None
    system_template: str | None
    token_budget: int | None
    context_overflow: str | None
    render_templates: bool
    recall_options: JsonObject | None
    auto_run_tools: bool
    forward_tool_calls: bool
    settings: JsonObject | None
    metadata: JsonObject | None
    budget: dict[str, object] | None


async def get(clients: Clients, developer: str, session_id: str) -> Session:
    """The developer's session with this id; NotFound otherwise."""
    session = await clients.store.get(SESSIONS, developer, checked_id(session_id, "session"))
    if session is None:
        raise NotFound("session", session_id)
    return session


async def find(clients: Clients, developer: str, page: Page) -> list[Session]:
    return await clients.store.find(SESSIONS, developer, page)


async def create(clients: Clients, developer: str, named: Participants, change: SessionChange) -> Session:
    who = await participants(clients.store, developer, named.agents, named.users)
    return await clients.store.insert(SESSIONS, developer, _values(change, who))


async def create_or_update(
    clients: Clients, developer: str, session_id: str, named: Participants, change: SessionChange
) -> Session:
    """Julep's create-or-update: the session's values replaced, or a session created with this id."""
    session_id = checked_id(session_id, "session")
    values = _values(change, await participants(clients.store, developer, named.agents, named.users))
    updated = await clients.store.update(SESSIONS, developer, session_id, values)
    if updated is not None:
        return updated
    return await clients.store.insert(SESSIONS, developer, values, id_=session_id)


async def reset(
    clients: Clients, developer: str, session_id: str, named: Participants, change: SessionChange
) -> Session:
    """Julep's update names no participants (the SDK's sessions.reset sends none): the session keeps its own.
    Mint's may name them, and then they are replaced (one side named alone: the other kept, as in a patch)."""
    session = await get(clients, developer, session_id)
    values = _values(change, await _who(clients.store, developer, named, session))
    return await _updated(clients, developer, session, values)


async def patch(
    clients: Clients, developer: str, session_id: str, named: Participants, change: SessionChange
) -> Session:
    """The keys given changed; metadata merged into the session's."""
    session = await get(clients, developer, session_id)
    values = _values(change, await _who(clients.store, developer, named, session))
    if "metadata" in values:
        given = values["metadata"]
        values["metadata"] = {**session.metadata, **(given if isinstance(given, dict) else {})}
    return await _updated(clients, developer, session, values)


async def delete(clients: Clients, developer: str, session_id: str) -> None:
    if not await clients.store.delete(SESSIONS, developer, checked_id(session_id, "session")):
        raise NotFound("session", session_id)


@dataclass(frozen=True)
class History:
    session_id: str
    entries: list[HistoryEntry]
    created_at: datetime


async def history(clients: Clients, developer: str, session_id: str) -> History:
    """Every entry of the session, replaced or not, in history order."""
    session = await get(clients, developer, session_id)
    entries = await SessionHistory(clients.store.pool).entries(developer, session.id)
    return History(session.id, entries, session.created_at)


async def clear_history(clients: Clients, developer: str, session_id: str) -> str:
    """Every entry of the session deleted, and its summary; the session's id, as stored."""
    session = await get(clients, developer, session_id)
    await SessionHistory(clients.store.pool).clear(developer, session.id)
    await clients.store.update(SESSIONS, developer, session.id, {"summary": None})
    return session.id


async def _who(store: Store, developer: str, named: Participants, session: Session) -> Participants | None:
    """The participants a change names (None: none named, the session keeps its own); naming only users (or
    only agents) keeps the other side as it was."""
    if not named.agents and not named.users:
        return None
    return await participants(store, developer, named.agents or session.agents, named.users or session.users)


def _values(change: SessionChange, who: Participants | None) -> dict[str, object]:
    values: dict[str, object] = dict(change)
    if who is not None:
        values.update(agents=who.agents, users=who.users)
    if "metadata" in values and values["metadata"] is None:
        values["metadata"] = {}
    return values


async def _updated(clients: Clients, developer: str, session: Session, values: dict[str, object]) -> Session:
    updated = await clients.store.update(SESSIONS, developer, session.id, values)
    if updated is None:  # deleted meanwhile
        raise NotFound("session", session.id)
    return updated
