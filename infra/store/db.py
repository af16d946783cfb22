"""The Postgres connection pool and the migrations applied at start-up."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import asyncpg

from infra.store.tenancy import TenantConnection, reset_connection, scope_connection

# Serializes migrations when the API and a worker start at the same moment.
MIGRATION_LOCK = 7_100_001


def _encode(value: object) -> str:
    # NaN and Infinity are not JSON; refusing them here turns them into a 422 instead of bad rows.
    return json.dumps(value, allow_nan=False)


async def _init_connection(conn: asyncpg.Connection) -> None:
    for type_name in ("json", "jsonb"):
        await conn.set_type_codec(type_name, encoder=_encode, decoder=json.loads, schema="pg_catalog")


# HNSW candidates per vector query: recall@10 >= 0.95 on 100k chunks (bench/docs.py). Iterative scans let a
# filtered query (one owner's docs among many) keep scanning until it has its rows.
HNSW_EF_SEARCH = 100


# No connection may be pinned for long: a transaction left open, or a wait on a row lock, ends with an error
# instead of holding its connection (and whatever it locked) indefinitely.
GUARD_SETTINGS = {"idle_in_transaction_session_timeout": "60s", "lock_timeout": "10s"}


class DatabaseBusy(Exception):
    """No pooled connection became free in time."""


class Pool(asyncpg.Pool):
    """asyncpg's pool, where every acquire (`pool.fetch(...)` included) gives up after `acquire_timeout`
    seconds with DatabaseBusy: a pool that is used up shows as an error the caller can report (the API
    answers 503), not as requests that hang."""

    def __init__(self, *args: Any, acquire_timeout: float, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.acquire_timeout = acquire_timeout

    async def _acquire(self, timeout: float | None) -> Any:
        # asyncpg's one path to a connection, for `acquire()` and for the pool's own query methods alike.
        try:
            return await super()._acquire(self.acquire_timeout if timeout is None else timeout)
        except TimeoutError:
            raise DatabaseBusy(
                f"no database connection became free within {self.acquire_timeout:g} s "
                f"(all {self.get_max_size()} are in use)"
            ) from None


async def connect_pool(
    url: str,
    min_size: int = 1,
    max_size: int = 10,
    acquire_timeout: float = 10.0,
    statement_timeout: float | None = None,
) -> asyncpg.Pool:
    """A pool whose connections read and write json/jsonb as Python values, with doc search's HNSW settings
    (infra/store/docs.py) set once per connection rather than per query, and the guards above."""
    settings = {
        "hnsw.ef_search": str(HNSW_EF_SEARCH),
        "hnsw.iterative_scan": "relaxed_order",
        **GUARD_SETTINGS,
    }
    if statement_timeout:
        settings["statement_timeout"] = f"{int(statement_timeout * 1000)}ms"
    pool = Pool(
        url,
        acquire_timeout=acquire_timeout,
        min_size=min_size,
        max_size=max_size,
        max_queries=50_000,
        max_inactive_connection_lifetime=300.0,
        connect=None,
        init=_init_connection,
        setup=scope_connection,  # row-level security for queries made while acting for a tenant
        reset=reset_connection,
        loop=None,
        connection_class=TenantConnection,
        record_class=asyncpg.Record,
        server_settings=settings,
    )
    await pool
    return pool


def _migration_files() -> list[tuple[str, str]]:
    folder = resources.files("infra.store") / "migrations"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [(f.name.removesuffix(".sql"), f.read_text()) for f in files]


async def migrate(pool: asyncpg.Pool) -> list[str]:
    """Apply the migrations not yet recorded in schema_migrations; return the versions applied."""
    applied = []
    async with pool.acquire() as conn, conn.transaction():
        # A migration may build an index over many rows, and waits for another process's migrations.
        await conn.execute("SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0")
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
        for version, sql in _migration_files():
            if version in done:
                continue
            await conn.execute(sql)
            await conn.execute("INSERT INTO schema_migrations (version) VALUES ($1)", version)
            applied.append(version)
    return applied
