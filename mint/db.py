"""The Postgres connection pool and the migrations applied at start-up."""

from __future__ import annotations

import json
from importlib import resources

import asyncpg

from mint.tenancy import TenantConnection, scope_connection

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


async def connect_pool(url: str, min_size: int = 1, max_size: int = 10) -> asyncpg.Pool:
    """A pool whose connections read and write json/jsonb as Python values, with doc search's HNSW settings
    (mint/docs.py) set once per connection rather than per query."""
    return await asyncpg.create_pool(
        url,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        setup=scope_connection,  # row-level security for queries made while acting for a tenant
        connection_class=TenantConnection,
        server_settings={"hnsw.ef_search": str(HNSW_EF_SEARCH), "hnsw.iterative_scan": "relaxed_order"},
    )


def _migration_files() -> list[tuple[str, str]]:
    folder = resources.files("mint") / "migrations"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [(f.name.removesuffix(".sql"), f.read_text()) for f in files]


async def migrate(pool: asyncpg.Pool) -> list[str]:
    """Apply the migrations not yet recorded in schema_migrations; return the versions applied."""
    applied = []
    async with pool.acquire() as conn, conn.transaction():
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
