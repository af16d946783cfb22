"""Fan-out and history size against raw Temporal, measured in the same run.

Run: python -m bench.fanout   (starts its own embedded Postgres and Temporal dev server)
1. map_reduce over 1,000 api_call items with parallelism 50, against a raw Temporal workflow that runs the
   same 1,000 HTTP calls as activities in a sliding window of 50 (target: within 1.3x).
2. History bytes per prompt-sized step (a 128 KB tool result) with the claim check on and off.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bench.floor_workflows import SlidingWindowWorkflow, fetch
from mint import services
from mint.db import connect_pool, migrate
from mint.store import Store
from tests.stack import BackgroundStack

ITEMS, PARALLELISM, STEPS, PROMPT_BYTES = 1000, 50, 10, 128 * 1024


class _Listener(ThreadingHTTPServer):
    request_queue_size = 256  # 50 connections at once must not overflow the listen backlog


class _Server(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        body = b"x" * (PROMPT_BYTES if self.path == "/big" else 2)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


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
    history = await env.client.get_workflow_handle(execution_id).fetch_history()
    return sum(event.ByteSize() for event in history.events) / STEPS


async def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="mint-bench-"))
    server = services.start_postgres(folder)
    url = services.postgres_url(server)
    pool = await connect_pool(url)
    await migrate(pool)
    _, key = await Store(pool).create_developer("bench")
    http_server = _Listener(("127.0.0.1", 0), _Server)
    threading.Thread(target=http_server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{http_server.server_address[1]}"
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=services.find_binary("temporal"), ui=False
    )
    address = env.client.service_client.config.target_host
    stacks = {
        "on": BackgroundStack(url, address, task_queue="claim-on"),
        "off": BackgroundStack(url, address, task_queue="claim-off", claim_check_bytes=2**40),
    }
    for stack in stacks.values():
        await asyncio.to_thread(stack.start)
    try:
        raw = await raw_fan_out(env, base + "/")
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=stacks["on"].url, headers=headers, timeout=60) as api:
            mint = await mint_fan_out(api, base + "/")
            with_check = await history_bytes_per_step(api, env, base + "/big")
        async with httpx.AsyncClient(base_url=stacks["off"].url, headers=headers, timeout=60) as api:
            without_check = await history_bytes_per_step(api, env, base + "/big")
    finally:
        for stack in stacks.values():
            await asyncio.to_thread(stack.stop)
        await env.shutdown()
        await pool.close()
        http_server.shutdown()
        server.cleanup()
    print(f"fan-out of {ITEMS} calls, {PARALLELISM} at a time:")
    print(f"  raw Temporal sliding window   {raw:8.2f} s")
    print(f"  mint map_reduce               {mint:8.2f} s   ratio {mint / raw:5.2f}x (target <= 1.3x)")
    print(f"history bytes per step with a {PROMPT_BYTES // 1024} KB tool result:")
    print(f"  claim check off               {without_check:10.0f}")
    print(f"  claim check on                {with_check:10.0f}   ratio {with_check / without_check:7.4f}")


if __name__ == "__main__":
    asyncio.run(main())
