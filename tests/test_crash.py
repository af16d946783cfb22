"""kill -9 of a worker mid-run loses nothing and duplicates nothing; a new worker resumes within seconds."""

import asyncio
import signal
import time
import uuid

import httpx

from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.local_http import LocalServer, ok
from tests.stack import BackgroundStack, spawn_worker, stop_process

STEPS = 6


def _slowly(request):
    time.sleep(0.7)
    return ok(request)


async def test_kill_9_mid_run_resumes_without_loss_or_duplicates(postgres_url, temporal_env, api_key):
    queue = f"crash-{uuid.uuid4()}"
    address = temporal_address(temporal_env)
    api_stack = BackgroundStack(postgres_url, address, task_queue=queue, run_worker=False)
    await asyncio.to_thread(api_stack.start)
    first, second = spawn_worker(postgres_url, address, queue), None
    try:
        with LocalServer(_slowly) as server:
            headers = {"Authorization": f"Bearer {api_key}"}
            async with httpx.AsyncClient(base_url=api_stack.url, headers=headers) as api:
                task = await create_task(
                    api,
                    (await create_agent(api))["id"],
                    {
                        "name": "calls",
                        "tools": [{"name": "slow", "type": "api_call", "api_call": {"url": server.url}}],
                        "main": [{"tool": "slow", "arguments": {}} for _ in range(STEPS)],
                    },
                )
                execution = await start(api, task["id"])
                while sum(t["type"] == "step" for t in await transitions(api, execution["id"])) < 2:
                    await asyncio.sleep(0.1)
                first.send_signal(signal.SIGKILL)  # mid-call: the third request is in flight
                first.wait()
                second = spawn_worker(postgres_url, address, queue)
                done = await wait_for_status(api, execution["id"], timeout=90)
                assert done["status"] == "succeeded", done
                rows = await transitions(api, execution["id"])
                assert [r["type"] for r in rows] == ["init"] + ["step"] * STEPS + ["finish"]
                assert len({r["id"] for r in rows}) == len(rows) == done["transition_count"]
                # At most the in-flight call ran twice, and with the same idempotency key.
                keys = [r.headers["Idempotency-Key"] for r in server.requests]
                assert len(set(keys)) == STEPS and len(keys) <= STEPS + 1
    finally:
        stop_process(first)
        stop_process(second)
        await asyncio.to_thread(api_stack.stop)
