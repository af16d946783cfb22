"""Acting for one tenant: queries made inside `acting_as(developer_id)` run under row-level security.

The API enters it for each request once the API key names the developer (api/deps.py, through
services/tenancy.py's `acting_for`). Every connection
the pool hands out meanwhile switches to the role `mint_tenant` with `mint.developer_id` set, and the
policies of migration 0012 then show and accept only that developer's rows. So a query that forgets its
`developer_id = $1` still cannot read or write another tenant's data. Outside `acting_as` (worker,
reconciler, CLI) connections act with the owner's role, which acts for every tenant. The switch happens as
a connection is handed out (scope_connection), and only when it acted for someone else.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from contextvars import ContextVar

import asyncpg

TENANT_ROLE = "mint_tenant"
_developer: ContextVar[str | None] = ContextVar("mint_developer", default=None)


@contextlib.contextmanager
def acting_as(developer_id: str | None) -> Iterator[None]:
    """Queries inside act for `developer_id` (None: for no tenant, with the owner's role)."""
    token = _developer.set(developer_id)
    try:
        yield
    finally:
        _developer.reset(token)


UNKNOWN = "unknown"  # a connection whose scope a failed switch left unsure
# acting_as(ANY_TENANT): queries that read the same whichever tenant a connection acts for, or none (the API
# key look-up, through a function with its owner's rights: migration 0028), so no switch is made for them.
ANY_TENANT = "any tenant"


async def scope_connection(conn: asyncpg.Connection) -> None:
    """The pool's `setup`: runs as a connection is handed out, in the acquiring task's context, and makes it
    act for the task's tenant (or for none). A connection keeps its scope when it goes back to the pool, so
    the next task acting for the same tenant (most requests, on most deployments) gets it without a round
    trip; switching costs one, as scoping and resetting each did before."""
    wanted = _developer.get()
    if not isinstance(conn, TenantConnection):
        raise TypeError("the pool must make TenantConnections (connect_pool does)")
    if conn.scope == wanted or (wanted == ANY_TENANT and conn.scope != UNKNOWN):
        return
    if wanted == ANY_TENANT:
        wanted = None
    conn.set_scope(UNKNOWN)  # (on the connection itself: setup is given the pool's proxy of it)
    if wanted is None:
        await conn.execute("RESET ROLE; SELECT set_config('mint.developer_id', '', false)")
    else:
        await conn.execute(
            f"SET ROLE {TENANT_ROLE}; SELECT set_config('mint.developer_id', '{_uuid(wanted)}', false)"
        )
    conn.set_scope(wanted)


async def reset_connection(conn: asyncpg.Connection) -> None:
    """The pool's `reset`, as a connection goes back: nothing to send. Its tenant scope stays (the next
    acquire sets the one it needs), and Mint sets nothing else on a session: its settings are SET LOCAL, its
    locks transaction-scoped, and an open transaction was already rolled back (asyncpg does that first)."""


def _uuid(value: str) -> str:
    # Inlined into SQL (one round trip: a multi-statement execute takes no parameters), so it must be
    # exactly a UUID.
    return str(uuid.UUID(value))


class TenantConnection(asyncpg.Connection):
    """A connection that knows which tenant it acts for (None: for none, with the owner's role)."""

    scope: str | None = None

    def set_scope(self, developer_id: str | None) -> None:
        self.scope = developer_id
