"""Sessions: who takes part in one, checked to be the caller's."""

from __future__ import annotations

import uuid
from typing import Any

from infra.store.tables import AGENTS, USERS, Store, Table
from services.errors import Invalid, NotFound


async def owned_row(store: Store, table: Table, developer: str, id_: str) -> dict[str, Any] | None:
    """The developer's row with this id, or None (an id that is no UUID names no row)."""
    try:
        return await store.get(table, developer, str(uuid.UUID(id_)))
    except ValueError:
        return None


async def participants(
    store: Store, developer: str, agents: list[str], users: list[str]
) -> dict[str, list[str]]:
    """The session's agents and users, each checked to be the caller's (NotFound otherwise), without
    repeats."""
    if not agents:
        raise Invalid("a session needs at least one agent (`agent` or `agents`)")
    for kind, table, ids in (("agent", AGENTS, agents), ("user", USERS, users)):
        for id_ in ids:
            if await owned_row(store, table, developer, id_) is None:
                raise NotFound(kind, id_)
    return {"agents": list(dict.fromkeys(agents)), "users": list(dict.fromkeys(users))}
