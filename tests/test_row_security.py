"""Row-level security: while acting for a developer, a query without any tenant filter still sees, and may
write, only that developer's rows (migration 0012, mint/tenancy.py)."""

from __future__ import annotations

import asyncpg
import pytest

from mint.store import AGENTS, Store
from mint.tenancy import acting_as

UNFILTERED_READS = [
    "SELECT developer_id FROM agents",
    "SELECT developer_id FROM users",
    "SELECT developer_id FROM tasks",
    "SELECT developer_id FROM executions",
    "SELECT developer_id FROM transitions",
    "SELECT developer_id FROM secrets",
    "SELECT developer_id FROM docs",
    "SELECT developer_id FROM sessions",
    "SELECT developer_id FROM chat_turns",
]


async def test_every_table_with_tenant_rows_has_row_security(store):
    """A new table keyed by developer must get a policy too (like migration 0012's), or a query that
    forgets its filter would read every tenant's rows."""
    rows = await store.pool.fetch(
        """
        SELECT c.relname, c.relrowsecurity,
               EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid) AS has_policy
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind = 'r'
          AND EXISTS (SELECT 1 FROM pg_attribute a
                      WHERE a.attrelid = c.oid AND a.attname = 'developer_id' AND NOT a.attisdropped)
        """
    )
    # api_keys is read before the caller is known (to find who the caller is), never as a tenant.
    unguarded = [
        r["relname"]
        for r in rows
        if r["relname"] != "api_keys" and not (r["relrowsecurity"] and r["has_policy"])
    ]
    assert unguarded == []


@pytest.fixture
async def two(store: Store) -> tuple[str, str]:
    a, _ = await store.create_developer("rls a")
    b, _ = await store.create_developer("rls b")
    for developer in (a, b):
        await store.insert(AGENTS, developer, {"name": "agent", "metadata": {}})
    return a, b


@pytest.mark.parametrize("sql", UNFILTERED_READS)
async def test_an_unfiltered_read_sees_only_the_callers_rows(store, two, sql):
    a, b = two
    with acting_as(a):
        seen = {str(r["developer_id"]) for r in await store.pool.fetch(sql)}
    assert b not in seen and seen <= {a}


async def test_the_callers_agent_is_visible_and_anothers_is_not(store, two):
    a, b = two
    with acting_as(a):
        rows = await store.pool.fetch("SELECT developer_id FROM agents")
    assert {str(r["developer_id"]) for r in rows} == {a}
    everyone = {str(r["developer_id"]) for r in await store.pool.fetch("SELECT developer_id FROM agents")}
    assert {a, b} <= everyone  # outside acting_as (the worker, the CLI) every tenant is visible


async def test_writes_for_another_tenant_are_refused_or_touch_nothing(store, two):
    a, b = two
    with acting_as(a):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):  # WITH CHECK: a row must be the caller's
            await store.insert(AGENTS, b, {"name": "planted", "metadata": {}})
        assert await store.pool.execute("UPDATE agents SET name = 'renamed'") != "UPDATE 0"
        assert await store.pool.execute("DELETE FROM agents WHERE developer_id = $1", b) == "DELETE 0"
    names = {r["name"] for r in await store.pool.fetch("SELECT name FROM agents WHERE developer_id = $1", b)}
    assert names == {"agent"}  # B's agent was neither renamed nor deleted


async def test_a_released_connection_forgets_the_tenant(store, two):
    a, _ = two
    with acting_as(a):
        assert await store.pool.fetchval("SELECT current_user") == "mint_tenant"
    # The same pooled connections, handed out again outside acting_as, are the owner's again.
    for _ in range(store.pool.get_size() + 1):
        assert await store.pool.fetchval("SELECT current_user") != "mint_tenant"
        assert not await store.pool.fetchval("SELECT current_setting('mint.developer_id', true)")
