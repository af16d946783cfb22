"""Fan-out and history size against raw Temporal, measured in the same run.

Run: python -m bench.fanout   (starts its own embedded Postgres and Temporal dev server)
1. map_reduce over 1,000 api_call items with parallelism 50, against a raw Temporal workflow that runs the
   same 1,000 HTTP calls as activities in a sliding window of 50 (target: within 1.3x).
2. History bytes per prompt-sized step (a 128 KB tool result) with the claim check on and off.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid

import httpx
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bench.floor_workflows import SlidingWindowWorkflow, fetch
from tests.local_http import LocalServer, Request
from tests.stack import LocalMint

ITEMS, PARALLELISM, STEPS, PROMPT_BYTES, ROUNDS = 1000, 50, 10, 128 * 1024, 3


def _answer(request: Request) -> tuple[int, dict[str, str], bytes]:
    return 200, {}, b"x" * (PROMPT_BYTES if request.path == "/big" else 2)


async def _finish(api: httpx.AsyncClient, task_id: str) -> str:
    execution = (await api.post(f"/tasks/{task_id}/executions", json={"input": {}})).json()
    while (status := (await api.get(f"/executions/{execution['id']}")).json()["status"]) not in (
        "succeeded",
        "failed",
        "cancelled",
    ):
        await asyncio.sleep(0.02)
    assert status == "succeeded", status
    return execution["id"]


async def _task(api: httpx.AsyncClient, doc: dict) -> str:
    agent = (await api.post("/agents", json={"name": "bench"})).json()
    response = await api.post(f"/agents/{agent['id']}/tasks", json=doc)
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def raw_fan_out(env: WorkflowEnvironment, url: str) -> float:
    async with Worker(
        env.client,
        task_queue="raw-fanout",
        workflows=[SlidingWindowWorkflow],
        activities=[fetch],
        max_concurrent_activities=200,
    ):
        start = time.perf_counter()
        await env.client.execute_workflow(
            SlidingWindowWorkflow.run,
            args=[url, ITEMS, PARALLELISM],
            id=f"raw-{uuid.uuid4()}",
            task_queue="raw-fanout",
        )
        return time.perf_counter() - start


async def mint_fan_out(api: httpx.AsyncClient, url: str) -> float:
    tool = {"name": "fetch", "type": "api_call", "api_call": {"url": url}}
    doc = {
        "name": "fan",
        "tools": [tool],
        "main": [
            {
                "over": f"$ list(range({ITEMS}))",
                "map": {"tool": "fetch", "arguments": {}},
                "parallelism": PARALLELISM,
            }
        ],
    }
    task_id = await _task(api, doc)
    start = time.perf_counter()
    await _finish(api, task_id)
    return time.perf_counter() - start


async def history_bytes_per_step(api: httpx.AsyncClient, env: WorkflowEnvironment, url: str) -> float:
    tool = {"name": "big", "type": "api_call", "api_call": {"url": url}}
    doc = {"name": "big", "tools": [tool], "main": [{"tool": "big", "arguments": {}}] * STEPS}
    execution_id = await _finish(api, await _task(api, doc))
    handle = env.client.get_workflow_handle(execution_id)
    # The execution's row ends with its last write, a moment before its workflow does.
    while (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
        await asyncio.sleep(0.02)
    history = await handle.fetch_history()
    return sum(event.ByteSize() for event in history.events) / STEPS


async def main() -> None:
    local = await LocalMint().start()
    try:
        claim_on = await local.stack(task_queue="claim-on")
        claim_off = await local.stack(task_queue="claim-off", claim_check_bytes=2**40)
        with LocalServer(_answer) as server:
            raws, mints = [], []
            async with local.api(claim_on) as api:
                for _ in range(ROUNDS):  # alternated, so drift on a noisy machine hits both sides
                    raws.append(await raw_fan_out(local.env, server.url))
                    mints.append(await mint_fan_out(api, server.url))
                raw, mint = statistics.median(raws), statistics.median(mints)
                with_check = await history_bytes_per_step(api, local.env, server.url + "big")
            async with local.api(claim_off) as api:
                without_check = await history_bytes_per_step(api, local.env, server.url + "big")
    finally:
        await local.close()
    print(f"fan-out of {ITEMS} calls, {PARALLELISM} at a time (median of {ROUNDS} alternated rounds):")
    print(f"  raw Temporal sliding window   {raw:8.2f} s")
    print(f"  mint map_reduce               {mint:8.2f} s   ratio {mint / raw:5.2f}x (target <= 1.3x)")
    print(f"history bytes per step with a {PROMPT_BYTES // 1024} KB tool result:")
    print(f"  claim check off               {without_check:10.0f}")
    print(f"  claim check on                {with_check:10.0f}   ratio {with_check / without_check:7.4f}")


if __name__ == "__main__":
    asyncio.run(main())
