"""The reconciler ends executions whose workflows cannot: terminated outside Mint, or never started; and
reports the end it writes to the execution's callback_url, as the workflow would have."""

import asyncio
import uuid

import httpx
import pytest_asyncio

from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.local_http import LocalServer
from tests.stack import BackgroundStack
from tests.test_webhooks import received, secret_of, start_with, verified

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


async def test_the_end_it_writes_is_reported_to_the_callback_url(reconciling, temporal_env):
    api = reconciling
    receiver = LocalServer()
    task = await create_task(api, (await create_agent(api))["id"], WAITING)
    execution = await start_with(api, task["id"], receiver.url + "hook", {})
    await received(receiver, 1)  # awaiting_input, reported by the workflow
    handle = temporal_env.client.get_workflow_handle(execution["id"])
    await handle.terminate(reason="operator")
    done = await wait_for_status(api, execution["id"], timeout=30)
    requests = await received(receiver, 2)
    body = verified(requests[1], await secret_of(api))
    assert body == {
        "execution_id": execution["id"],
        "task_id": task["id"],
        "status": "failed",
        "error": "ExecutionLost: the workflow ended outside Mint (terminated)",
    }
    first_run = (await handle.describe()).raw_description.workflow_execution_info.first_run_id
    delivery = f"webhook-{execution['id']}-{done['transition_count']}-{first_run[:8]}"
    assert requests[1].headers["Mint-Delivery-Id"] == delivery
    await asyncio.sleep(1.5)  # later rounds leave the ended execution alone: one report of its end
    assert len(receiver.requests) == 2
