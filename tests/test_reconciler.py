"""The reconciler ends executions whose workflows cannot: terminated outside Mint, or never started."""

import asyncio
import uuid

import httpx
import pytest_asyncio

from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.stack import BackgroundStack

WAITING = {"name": "waits", "main": [{"wait_for_input": {"info": {"q": "$ 'anyone?'"}}}]}


@pytest_asyncio.fixture(loop_scope="session")
async def reconciling(postgres_url, temporal_env, api_key):
    stack = BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue=f"reconcile-{uuid.uuid4()}",
        reconcile_interval=0.2,
        reconcile_quiet=0.5,
    )
    await asyncio.to_thread(stack.start)
    async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}) as api:
        yield api
    await asyncio.to_thread(stack.stop)


async def test_a_terminated_workflow_ends_its_execution(reconciling, temporal_env):
    api = reconciling
    task = await create_task(api, (await create_agent(api))["id"], WAITING)
    terminated, healthy = await start(api, task["id"]), await start(api, task["id"])
    for execution in (terminated, healthy):
        await wait_for_status(api, execution["id"], {"awaiting_input"})
    await temporal_env.client.get_workflow_handle(terminated["id"]).terminate(reason="operator")
    done = await wait_for_status(api, terminated["id"], timeout=30)
    assert done["status"] == "failed" and "ended outside Mint (terminated)" in done["error"]
    rows = await transitions(api, terminated["id"])
    assert [r["type"] for r in rows] == ["init", "wait", "error"]
    await asyncio.sleep(1.5)  # several rounds: the healthy execution is left alone
    assert (await api.get(f"/executions/{healthy['id']}")).json()["status"] == "awaiting_input"


async def test_an_execution_whose_start_was_lost_fails(reconciling, store, api_key):
    api = reconciling
    task = await create_task(api, (await create_agent(api))["id"], WAITING)
    developer = await store.developer_for_key(api_key)
    lost = await store.create_execution(developer, (task["id"], 1), {}, {}, None)
    done = await wait_for_status(api, lost.id, timeout=30)
    assert done["status"] == "failed" and "never started" in done["error"]
    assert await transitions(api, lost.id) == []
