"""Chaos: 50 executions run while their worker is killed with SIGKILL ten times.

All succeed, no transition is written twice, and the side effects a test server sees happen once per
idempotency key (calls are retried with the same key, so a server can drop repeats).
"""

import asyncio
import signal
import uuid
from collections import Counter

import httpx

from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.local_http import LocalServer
from tests.stack import BackgroundStack, spawn_worker, stop_process

EXECUTIONS = 50
KILLS = 10
CALLS_PER_EXECUTION = 4  # one call, then a map of three calls


def _task(url: str) -> dict:
    return {
        "name": "chaos",
        "tools": [{"name": "effect", "type": "api_call", "api_call": {"method": "POST", "url": url}}],
        "main": [
            {"tool": "effect", "arguments": {"json": {"n": "$ _['n']"}}},
            {"sleep": {"seconds": 1}},
            {
                "over": "$ [1, 2, 3]",
                "map": {"tool": "effect", "arguments": {"json": {"item": "$ _"}}},
                "parallelism": 2,
            },
            {"evaluate": {"calls": "$ len(_) + 1"}},
        ],
    }


async def test_fifty_executions_survive_ten_kills(postgres_url, temporal_env, api_key):
    queue = f"chaos-{uuid.uuid4()}"
    address = temporal_address(temporal_env)
    api_stack = BackgroundStack(postgres_url, address, task_queue=queue, run_worker=False)
    await asyncio.to_thread(api_stack.start)
    worker = spawn_worker(postgres_url, address, queue)
    try:
        with LocalServer() as server:
            headers = {"Authorization": f"Bearer {api_key}"}
            async with httpx.AsyncClient(base_url=api_stack.url, headers=headers, timeout=30) as api:
                task = await create_task(api, (await create_agent(api))["id"], _task(server.url))
                executions = [await start(api, task["id"], {"n": n}) for n in range(EXECUTIONS)]
                for _ in range(KILLS):
                    await asyncio.sleep(1.5)
                    worker.send_signal(signal.SIGKILL)
                    worker.wait()
                    worker = spawn_worker(postgres_url, address, queue)
                for execution in executions:
                    done = await wait_for_status(api, execution["id"], timeout=300)
                    assert done["status"] == "succeeded", done
                    assert done["output"] == {"calls": CALLS_PER_EXECUTION}
                    rows = await transitions(api, execution["id"])
                    assert len({r["id"] for r in rows}) == len(rows) == done["transition_count"]
                    assert [r["type"] for r in rows][0] == "init" and rows[-1]["type"] == "finish"
                    assert sum(r["current"]["workflow"] == "main[2].map" for r in rows) == 3
            keys = Counter(r.headers.get("Idempotency-Key") for r in server.requests)
            assert None not in keys
            assert (
                len(keys) == EXECUTIONS * CALLS_PER_EXECUTION
            )  # one key per call, however often it was sent
    finally:
        stop_process(worker)
        await asyncio.to_thread(api_stack.stop)
