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


FAST_STEPS = 60


def _quickly(request):
    time.sleep(0.02)  # fast, but the chain lasts long enough to be killed in its middle
    return ok(request)


async def test_kill_9_mid_chain_of_fast_calls_applies_every_idempotency_key_once(
    postgres_url, temporal_env, api_key
):
    """Fast calls run in the worker (local activities), many in one workflow task; a worker lost mid-chain
    must not make the calls that already answered again (their answers are recorded with the next call)."""
    queue = f"crash-fast-{uuid.uuid4()}"
    address = temporal_address(temporal_env)
    api_stack = BackgroundStack(postgres_url, address, task_queue=queue, run_worker=False)
    await asyncio.to_thread(api_stack.start)
    first, second = spawn_worker(postgres_url, address, queue), None
    try:
        with LocalServer(_quickly) as server:
            headers = {"Authorization": f"Bearer {api_key}"}
            async with httpx.AsyncClient(base_url=api_stack.url, headers=headers) as api:
                task = await create_task(
                    api,
                    (await create_agent(api))["id"],
                    {
                        "name": "fast calls",
                        "tools": [{"name": "fast", "type": "api_call", "api_call": {"url": server.url}}],
                        "main": [{"tool": "fast", "arguments": {}} for _ in range(FAST_STEPS)],
                    },
                )
                execution = await start(api, task["id"])
                while sum(t["type"] == "step" for t in await transitions(api, execution["id"])) < 10:
                    await asyncio.sleep(0.02)
                first.send_signal(signal.SIGKILL)
                first.wait()
                killed_after = len(server.requests)
                assert killed_after < FAST_STEPS, "the chain ended before the kill; the test proves nothing"
                second = spawn_worker(postgres_url, address, queue)
                done = await wait_for_status(api, execution["id"], timeout=90)
                assert done["status"] == "succeeded", done
                rows = await transitions(api, execution["id"])
                assert [r["type"] for r in rows] == ["init"] + ["step"] * FAST_STEPS + ["finish"]
                keys = [r.headers["Idempotency-Key"] for r in server.requests]
                # Every key applied (a server that drops repeats applies each once), and only the call in
                # flight at the kill was sent twice: the answered ones were not made again.
                assert len(set(keys)) == FAST_STEPS
                assert len(keys) <= FAST_STEPS + 1, f"{len(keys) - FAST_STEPS} calls were made again"
    finally:
        stop_process(first)
        stop_process(second)
        await asyncio.to_thread(api_stack.stop)
