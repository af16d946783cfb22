"""The Temporal UI shows Mint's words: each execution's workflow carries a summary (task, agent), details that
follow the run (the step, what a wait asks for), Mint's search attributes (task, agent, developer, status),
and its activities and timers carry summaries naming the step and the tool. Read here through a Temporal
client with Mint's data converter, as the UI reads them through Mint's codec server."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any

import httpx
import pytest_asyncio
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.converter import WorkflowSerializationContext
from temporalio.testing import WorkflowEnvironment

from contracts.temporal import MINT_AGENT, MINT_DEVELOPER, MINT_STATUS, MINT_TASK, SEARCH_ATTRIBUTES
from infra.settings import Settings
from infra.store.tables import Store
from infra.temporal.client import connect_temporal
from infra.temporal.search_attributes import missing_search_attributes, resolve_search_attributes
from process.local_services import dev_server_args
from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, wait_for_status
from tests.local_http import LocalServer
from tests.stack import TEST_ENCRYPTION_KEY, BackgroundStack
from workflows.visibility import MINT_STATUS_PATCH

# The SDK's built-in query behind the UI's "current details".
METADATA_QUERY = "__temporal_workflow_metadata"


def review_task(name: str, url: str) -> dict[str, Any]:
    """A call, then a wait for a person, then a sleep: every kind of thing the UI should name."""
    return {
        "name": name,
        "tools": [{"name": "ping", "type": "api_call", "api_call": {"method": "GET", "url": url}}],
        "main": [
            {"label": "fetch", "tool": "ping", "arguments": {}},
            {"label": "approve", "wait_for_input": {"info": {"question": "Ship release 42?"}}},
            {"label": "settle", "sleep": {"seconds": 0.2}},
            {"evaluate": {"answer": "$ steps['approve'].output"}},
        ],
    }


@pytest_asyncio.fixture(loop_scope="session")
async def temporal(store: Store, temporal_env: WorkflowEnvironment) -> Client:
    """A Temporal client that reads Mint's sealed payloads (summaries and details are sealed too)."""
    return await connect_temporal(
        temporal_address(temporal_env), store.pool, encryption_keys=(TEST_ENCRYPTION_KEY,)
    )


@pytest_asyncio.fixture(loop_scope="session")
async def developer(store: Store, stack: BackgroundStack) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    """A developer of its own (its id is what MintDeveloper holds) and an API client for it."""
    developer_id, key = await store.create_developer("inspector")
    async with httpx.AsyncClient(
        base_url=stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as client:
        yield developer_id, client


async def eventually(read: Callable[[], Awaitable[Any]], check: Callable[[Any], bool], what: str) -> Any:
    """`read()` once `check` holds of it (Temporal's visibility store catches up a moment after the fact)."""
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        value = await read()
        if check(value):
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what}: still {value!r}")
        await asyncio.sleep(0.1)


async def mint_status(handle: WorkflowHandle) -> str | None:
    return (await handle.describe()).typed_search_attributes.get(MINT_STATUS)


async def listed(temporal: Client, query: str) -> list[str]:
    return [w.id async for w in temporal.list_workflows(query)]


async def summaries(temporal: Client, handle: WorkflowHandle) -> list[str]:
    """The summaries of the history's events (activities, local activities' markers, timers)."""
    history = await handle.fetch_history()
    context = WorkflowSerializationContext(namespace=temporal.namespace, workflow_id=handle.id)
    converter = temporal.data_converter.with_context(context)
    payloads = [e.user_metadata.summary for e in history.events if e.user_metadata.HasField("summary")]
    return [str(text) for text in await converter.decode(payloads)] if payloads else []


async def test_a_waiting_execution_shows_its_task_agent_step_and_question(temporal, developer):
    developer_id, api = developer
    name = f"release review {uuid.uuid4().hex[:8]}"
    agent = await create_agent(api, name="Release Manager")
    with LocalServer() as server:
        task = await create_task(api, agent["id"], review_task(name, server.url))
        execution = await start(api, task["id"])
        await wait_for_status(api, execution["id"], {"awaiting_input"})
        handle = temporal.get_workflow_handle(execution["id"])  # the workflow id is the execution id

        description = await handle.describe()
        assert await description.static_summary() == f"{name} · agent Release Manager"
        details = await description.static_details()
        assert execution["id"] in details and task["id"] in details and developer_id in details
        attributes = description.typed_search_attributes
        assert attributes.get(MINT_TASK) == name
        assert attributes.get(MINT_AGENT) == "Release Manager"
        assert attributes.get(MINT_DEVELOPER) == developer_id
        await eventually(lambda: mint_status(handle), lambda s: s == "awaiting_input", "MintStatus")

        metadata = await handle.query(METADATA_QUERY)
        current = metadata.current_details
        assert "**Status** awaiting_input" in current, current
        assert 'main[1] "approve"' in current and "Ship release 42?" in current, current
        assert f"mint resume {execution['id']}" in current, current

        # From the UI back to Mint: the list filtered by task, and by task and status.
        waiting = f'MintTask="{name}" AND MintStatus="awaiting_input"'
        assert await eventually(lambda: listed(temporal, waiting), bool, waiting) == [execution["id"]]

        resumed = await api.put(f"/executions/{execution['id']}", json={"status": "running", "input": "yes"})
        assert resumed.status_code == 200, resumed.text
        done = await wait_for_status(api, execution["id"])
        assert done["status"] == "succeeded", done

    await eventually(lambda: mint_status(handle), lambda s: s == "succeeded", "MintStatus")
    succeeded = f'MintTask="{name}" AND MintStatus="succeeded"'
    assert await eventually(lambda: listed(temporal, succeeded), bool, succeeded) == [execution["id"]]
    assert await listed(temporal, f'MintTask="{name}"') == [execution["id"]]
    assert await listed(temporal, f'MintTask="{name} (another)"') == []

    metadata = await handle.query(METADATA_QUERY)
    assert metadata.current_details.startswith("**Status** succeeded"), metadata.current_details
    # The timeline names the steps: the tool call, the transitions each write records, the sleep.
    shown = await summaries(temporal, handle)
    assert any(s.startswith('main[0] "fetch" · tool ping (api_call)') for s in shown), shown
    assert any("up to wait at main[1]" in s and s.endswith("awaiting_input") for s in shown), shown
    assert any(s.startswith('main[2] "settle" · sleeping until ') for s in shown), shown
    assert any(s.endswith("· succeeded") for s in shown), shown


async def test_status_changes_cost_an_event_each_not_one_a_step(temporal, developer):
    """MintStatus changes with the status only: a run of many steps upserts it once, at its end."""
    _, api = developer
    name = f"many steps {uuid.uuid4().hex[:8]}"
    steps = [{"evaluate": {"i": f"$ {i}"}} for i in range(50)]
    task = await create_task(api, (await create_agent(api))["id"], {"name": name, "main": steps})
    execution = await start(api, task["id"])
    assert (await wait_for_status(api, execution["id"]))["status"] == "succeeded"
    handle = temporal.get_workflow_handle(execution["id"])
    await handle.result()  # the row says succeeded before the last workflow task's commands are in history
    history = await handle.fetch_history()
    upserts = [e for e in history.events if e.HasField("upsert_workflow_search_attributes_event_attributes")]
    changed = [
        set(e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields)
        for e in upserts
    ]
    # The patch marker's own TemporalChangeVersion, then MintStatus once.
    assert sum("MintStatus" in fields for fields in changed) == 1, changed


async def test_without_search_attributes_executions_still_run(postgres_url, temporal_env, store, temporal):
    """MINT_SEARCH_ATTRIBUTES=off (as `auto` ends up where they are not registered): no search attributes,
    and the workflow never upserts one (which an unregistered namespace would refuse), yet it runs and waits."""
    async with BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue=f"ui-off-{uuid.uuid4()}",
        search_attributes="off",
    ) as stack:
        _, key = await store.create_developer("no attributes")
        async with httpx.AsyncClient(
            base_url=stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as api:
            task = await create_task(
                api,
                (await create_agent(api))["id"],
                {"name": "plain", "main": [{"wait_for_input": {"info": "ok?"}}]},
            )
            execution = await start(api, task["id"])
            await wait_for_status(api, execution["id"], {"awaiting_input"})
            handle = temporal.get_workflow_handle(execution["id"])
            assert "ok?" in (await handle.query(METADATA_QUERY)).current_details
            await api.put(f"/executions/{execution['id']}", json={"status": "running", "input": 1})
            assert (await wait_for_status(api, execution["id"]))["status"] == "succeeded"
    description = await handle.describe()
    assert await description.static_summary() == "plain · agent tester"  # the summary needs no registration
    assert description.typed_search_attributes.get(MINT_TASK) is None
    assert description.typed_search_attributes.get(MINT_STATUS) is None
    history = await handle.fetch_history()
    recorded = b"".join(event.SerializeToString() for event in history.events)
    assert b"MintStatus" not in recorded and MINT_STATUS_PATCH.encode() not in recorded


async def bare_namespace(client: Client) -> str:
    """A new namespace, with none of Mint's search attributes registered."""
    namespace = f"bare-{uuid.uuid4().hex[:8]}"
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(namespace=namespace, workflow_execution_retention_period={"seconds": 86400})
    )
    return namespace


async def test_auto_turns_them_off_where_the_namespace_lacks_them(temporal_env, caplog):
    """A cluster Mint does not manage (TEMPORAL_ADDRESS): until an operator registers them, Mint sets none,
    and says how to register them."""
    client = temporal_env.client
    namespace = await bare_namespace(client)
    cluster = Settings(temporal_address=temporal_address(temporal_env), temporal_namespace=namespace)
    with caplog.at_level(logging.WARNING, logger="infra.temporal.search_attributes"):
        resolved = await resolve_search_attributes(cluster, client)
    assert resolved.search_attributes == "off"
    assert (
        f"temporal operator search-attribute create --namespace {namespace} --name MintStatus --type Keyword"
        in caplog.text
    )
    assert await missing_search_attributes(client, namespace) == [a.name for a in SEARCH_ATTRIBUTES]
    off = replace(cluster, search_attributes="off")
    assert (await resolve_search_attributes(off, client)).search_attributes == "off"
    on = replace(cluster, search_attributes="on")  # the operator vouches for them: not even asked
    assert (await resolve_search_attributes(on, client)).search_attributes == "on"


async def test_mint_registers_them_on_its_own_dev_server(temporal_env):
    """`mint up`'s dev server registers them when it creates its database; one made before they existed (a
    data dir from an older Mint) gets them from the API at start."""
    client = temporal_env.client
    namespace = await bare_namespace(client)
    own = Settings(temporal_namespace=namespace)  # no TEMPORAL_ADDRESS: the dev server is Mint's
    assert (await resolve_search_attributes(own, client)).search_attributes == "on"
    assert await missing_search_attributes(client, namespace) == []


def test_the_dev_server_registers_every_search_attribute():
    args = dev_server_args()
    registered = {args[i + 1] for i, arg in enumerate(args) if arg == "--search-attribute"}
    assert registered == {
        "MintTask=Keyword",
        "MintAgent=Keyword",
        "MintDeveloper=Keyword",
        "MintStatus=Keyword",
    }
