"""Executions per second of one `mint worker` process, for the README's sizing guidance (Sizing workers).

Run: python -m bench.worker_throughput   (starts its own embedded Postgres and Temporal dev server)
An API in this process and one `mint worker` in its own, as deployed; EXECUTIONS executions of a typical
task (three pure steps, two api_calls to a local server answering in 20 ms, a log) started IN_FLIGHT at a
time; the rate is executions finished per second of wall time, after a warm-up round.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx

from tests.local_http import LocalServer, Request, ok
from tests.stack import BackgroundStack, LocalMint, spawn_worker, stop_process

EXECUTIONS, IN_FLIGHT, WARM_UP = 300, 50, 20


def _slowish(request: Request):
    time.sleep(0.02)
    return ok(request)


def _task(url: str) -> dict:
    return {
        "name": "typical",
        "tools": [{"name": "fetch", "type": "api_call", "api_call": {"url": url}}],
        "main": [
            {"evaluate": {"n": "$ 1 + 1"}},
            {"tool": "fetch", "arguments": {}},
            {"evaluate": {"m": "$ steps[0].output.n * 3"}},
            {"tool": "fetch", "arguments": {}},
            {"log": "done"},
            {"evaluate": {"ok": "$ True"}},
        ],
    }


async def _run(api: httpx.AsyncClient, task_id: str, count: int) -> float:
    """Seconds to finish `count` executions, IN_FLIGHT at a time."""
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def one() -> None:
        async with gate:
            execution = (await api.post(f"/tasks/{task_id}/executions", json={"input": {}})).json()
            while (status := (await api.get(f"/executions/{execution['id']}")).json()["status"]) not in (
                "succeeded",
                "failed",
            ):
                await asyncio.sleep(0.05)
            assert status == "succeeded", status

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(count)))
    return time.perf_counter() - started


async def main() -> None:
    mint = await LocalMint().start()
    queue = f"throughput-{uuid.uuid4()}"
    address = mint.env.client.service_client.config.target_host
    worker = spawn_worker(mint.database_url, address, queue)
    try:
        with LocalServer(_slowish) as server:
            stack = await asyncio.to_thread(
                BackgroundStack(mint.database_url, address, task_queue=queue, run_worker=False).start
            )
            try:
                async with mint.api(stack) as api:
                    agent = (await api.post("/agents", json={"name": "bench"})).json()
                    task = (await api.post(f"/agents/{agent['id']}/tasks", json=_task(server.url))).json()
                    await _run(api, task["id"], WARM_UP)
                    seconds = await _run(api, task["id"], EXECUTIONS)
                    print(
                        f"{EXECUTIONS} executions, {IN_FLIGHT} in flight, one worker process: {seconds:.1f} s, "
                        f"{EXECUTIONS / seconds:.1f} executions/s"
                    )
            finally:
                await asyncio.to_thread(stack.stop)
    finally:
        stop_process(worker)
        await mint.close()


if __name__ == "__main__":
    asyncio.run(main())
