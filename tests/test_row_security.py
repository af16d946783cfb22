"""Row-level security: while acting for a developer, a query without any tenant filter still sees, and may
write, only that developer's rows (migration 0012, infra/store/tenancy.py)."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from infra.store.tables import AGENTS, Store
from infra.store.tenancy import ANY_TENANT, acting_as
from tests.helpers import run_task

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
    "SELECT developer_id FROM call_answers",
    "SELECT developer_id FROM projects",
    "SELECT developer_id FROM files",
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


async def test_a_pooled_connection_acts_for_whoever_takes_it_next(store, two):
    """Connections keep their tenant scope in the pool (scope_connection switches it only when needed)."""
    a, b = two
    for developer in (a, b, None, b, a):
        with acting_as(developer):
            for _ in range(store.pool.get_size() + 1):
                row = await store.pool.fetchrow(
                    "SELECT current_user AS role, current_setting('mint.developer_id', true) AS developer"
                )
                assert (row["role"] == "mint_tenant") == (developer is not None)
                assert (row["developer"] or None) == developer


# Records who inserted a probe agent: the role and the developer the connection acts for.
PROBE_SQL = """
CREATE TABLE IF NOT EXISTS rls_probe (marker text, role text, developer text);
GRANT INSERT ON rls_probe TO mint_tenant;
CREATE OR REPLACE FUNCTION rls_probe() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO rls_probe VALUES (NEW.name, current_user, current_setting('mint.developer_id', true));
    RETURN NEW;
END $$;
CREATE OR REPLACE TRIGGER rls_probe AFTER INSERT ON agents
    FOR EACH ROW WHEN (NEW.name LIKE 'rls-probe-%') EXECUTE FUNCTION rls_probe();
"""


async def test_a_system_tool_call_acts_for_the_executions_developer(api, api_key, store):
    """System tools call Mint's API in process; their queries must run under row-level security as any
    request's do (the tenant role, the execution's developer), never with the owner's role that sees all."""
    marker = f"rls-probe-{uuid.uuid4()}"
    await store.pool.execute(PROBE_SQL)
    try:
        task = {
            "name": "probe",
            "tools": [{"name": "make", "type": "system", "system": {"call": "agent.create"}}],
            "main": [{"tool": "make", "arguments": {"name": f"$ {marker!r}"}}],
        }
        execution, _ = await run_task(api, task)
    finally:
        await store.pool.execute("DROP TRIGGER IF EXISTS rls_probe ON agents")
    assert execution["status"] == "succeeded", execution["error"]
    seen = await store.pool.fetch("SELECT role, developer FROM rls_probe WHERE marker = $1", marker)
    developer = await store.developer_for_key(api_key)
    assert [dict(r) for r in seen] == [{"role": "mint_tenant", "developer": developer}]


async def test_an_api_key_is_looked_up_on_any_connection_without_a_switch(store):
    """The API reads a request's key before it knows the tenant: a pooled connection that acts for a tenant
    finds any developer's live key (migration 0028's function), and goes on acting for its tenant."""
    a, key_a = await store.create_developer("key a")
    b, key_b = await store.create_developer("key b")
    _, revoked = await store.create_developer("key revoked")
    await store.revoke_key(revoked)
    size = store.pool.get_size() + 1
    with acting_as(a):
        for _ in range(size):  # every pooled connection now acts for a
            assert await store.pool.fetchval("SELECT current_user") == "mint_tenant"
    for _ in range(size):
        assert await store.developer_for_key(key_b) == b
        assert await store.developer_for_key(key_a) == a
        assert await store.developer_for_key(revoked) is None
        assert await store.developer_for_key("not a key") is None
    with acting_as(ANY_TENANT):
        for _ in range(size):
            assert await store.pool.fetchval("SELECT current_setting('mint.developer_id', true)") == a
    with acting_as(a):  # api_keys itself stays out of a tenant's reach
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await store.pool.fetch("SELECT developer_id FROM api_keys")
