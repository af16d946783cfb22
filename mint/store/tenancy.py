"""Acting for one tenant: queries made inside `acting_as(developer_id)` run under row-level security.

The API enters it for each request once the API key names the developer (api/deps.py). Every connection
the pool hands out meanwhile switches to the role `mint_tenant` with `mint.developer_id` set, and the
policies of migration 0012 then show and accept only that developer's rows. So a query that forgets its
`developer_id = $1` still cannot read or write another tenant's data. Outside `acting_as` (worker,
reconciler, CLI) connections keep the owner's role, which acts for every tenant.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

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


async def scope_connection(conn: asyncpg.Connection) -> None:
    """The pool's `setup`: runs as a connection is handed out, in the acquiring task's context."""
    developer_id = _developer.get()
    if developer_id is not None:
        await conn.execute(
            f"SET ROLE {TENANT_ROLE}; SELECT set_config('mint.developer_id', '{_uuid(developer_id)}', false)"
        )
        if isinstance(conn, TenantConnection):
            conn.mark_scoped()  # (on the connection itself: setup is given the pool's proxy of it)


async def reset_connection(conn: asyncpg.Connection) -> None:
    """The pool's `reset`, as a connection goes back: a connection scoped to a tenant gets asyncpg's full
    reset (and its role back); any other is handed back as it is, a round trip saved on every query of the
    worker. That is safe because Mint sets nothing else on a session: its settings are SET LOCAL, its locks
    transaction-scoped, and an open transaction was already rolled back (asyncpg does that first)."""
    if isinstance(conn, TenantConnection) and conn.scoped:
        await conn.execute(conn.get_reset_query())
        conn.scoped = False


def _uuid(value: str) -> str:
    # Inlined into SQL (one round trip: a multi-statement execute takes no parameters), so it must be
    # exactly a UUID.
    return str(uuid.UUID(value))


class TenantConnection(asyncpg.Connection):
    """A connection whose release also drops the tenant's role (RESET ALL leaves the role as it is)."""

    scoped = False  # acting for a tenant since it was handed out

    def mark_scoped(self) -> None:
        self.scoped = True

    def get_reset_query(self) -> str:
        return super().get_reset_query() + "\nRESET ROLE;"


class ActingForNoTenant:
    """ASGI middleware: each request starts acting for no tenant. A server may start a request in a copy of
    the previous request's context (uvicorn does, on a keep-alive connection), which would otherwise carry
    that request's tenant into this one's first queries."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        with acting_as(None):
            await self.app(scope, receive, send)
