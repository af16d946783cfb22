"""Per-step cost of Mint against the raw Temporal and Postgres floor, measured in the same run.

Run: python -m bench.engine   (starts its own embedded Postgres and Temporal dev server)
Prints the floor (no-op activity round trip, local activity, empty workflow, one Postgres insert) and
Mint's cost per step for a chain of 100 evaluate steps and a chain of 20 api_call steps, with ratios.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bench.floor_workflows import ActivityWorkflow, EmptyWorkflow, noop
from mint import services
from mint.db import connect_pool, migrate
from mint.store import Store
from tests.stack import BackgroundStack

RUNS = 7


class _Echo(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


async def _median_ms(make, runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await make()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def measure_floor(env: WorkflowEnvironment, pool) -> dict[str, float]:
    client = env.client
    async with Worker(
        client, task_queue="floor", workflows=[EmptyWorkflow, ActivityWorkflow], activities=[noop]
    ):
        empty = await _median_ms(
            lambda: client.execute_workflow(EmptyWorkflow.run, id=f"e-{uuid.uuid4()}", task_queue="floor")
        )
        remote = await _median_ms(
            lambda: client.execute_workflow(
                ActivityWorkflow.run, False, id=f"a-{uuid.uuid4()}", task_queue="floor"
            )
        )
        local = await _median_ms(
            lambda: client.execute_workflow(
                ActivityWorkflow.run, True, id=f"l-{uuid.uuid4()}", task_queue="floor"
            )
        )
    await pool.execute("CREATE TABLE IF NOT EXISTS bench_floor (id uuid PRIMARY KEY, v jsonb)")
    insert = await _median_ms(
        lambda: pool.execute("INSERT INTO bench_floor VALUES ($1, $2)", uuid.uuid4(), {"x": 1}), runs=50
    )
    return {
        "empty_workflow_ms": empty,
        "activity_round_trip_ms": remote - empty,
        "local_activity_ms": local - empty,
        "postgres_insert_ms": insert,
    }


async def _run_execution(api: httpx.AsyncClient, task_id: str) -> None:
    execution = (await api.post(f"/tasks/{task_id}/executions", json={"input": {}})).json()
    while True:
        status = (await api.get(f"/executions/{execution['id']}")).json()["status"]
        if status in ("succeeded", "failed", "cancelled"):
            assert status == "succeeded", status
            return
        await asyncio.sleep(0.002)


async def measure_mint(api: httpx.AsyncClient, http_port: int) -> dict[str, float]:
    agent = (await api.post("/agents", json={"name": "bench"})).json()

    async def task(doc: dict) -> str:
        response = await api.post(f"/agents/{agent['id']}/tasks", json=doc)
        assert response.status_code == 201, response.text
        return response.json()["id"]

    one = await task({"name": "one", "main": [{"evaluate": {"i": "$ 0"}}]})
    chain = await task({"name": "chain", "main": [{"evaluate": {"i": f"$ {i} + 1"}} for i in range(100)]})
    tool = {
        "name": "echo",
        "type": "api_call",
        "api_call": {"method": "GET", "url": f"http://127.0.0.1:{http_port}/"},
    }
    calls = await task({"name": "calls", "tools": [tool], "main": [{"tool": "echo", "arguments": {}}] * 20})
    await _run_execution(api, one)  # warm up
    base = await _median_ms(lambda: _run_execution(api, one))
    pure = await _median_ms(lambda: _run_execution(api, chain))
    http = await _median_ms(lambda: _run_execution(api, calls))
    return {
        "one_step_execution_ms": base,
        "pure_step_ms": (pure - base) / 99,
        "api_call_step_ms": (http - base) / 19,
    }


async def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="mint-bench-"))
    server = services.start_postgres(folder)
    url = services.postgres_url(server)
    pool = await connect_pool(url)
    await migrate(pool)
    _, key = await Store(pool).create_developer("bench")
    http_server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=http_server.serve_forever, daemon=True).start()
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=services.find_binary("temporal"), ui=False
    )
    stack = await asyncio.to_thread(BackgroundStack(url, env.client.service_client.config.target_host).start)
    try:
        floor = await measure_floor(env, pool)
        async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}) as api:
            mint = await measure_mint(api, http_server.server_address[1])
    finally:
        await asyncio.to_thread(stack.stop)
        await env.shutdown()
        await pool.close()
        http_server.shutdown()
        server.cleanup()
    print("floor (median ms):")
    for name, value in floor.items():
        print(f"  {name:<24} {value:8.2f}")
    print("mint (median ms):")
    for name, value in mint.items():
        print(f"  {name:<24} {value:8.2f}")
    print("ratios:")
    print(
        f"  one-step execution / empty workflow       {mint['one_step_execution_ms'] / floor['empty_workflow_ms']:6.2f}x"
    )
    print(
        f"  pure step / local activity                {mint['pure_step_ms'] / floor['local_activity_ms']:6.3f}x"
    )
    print(
        f"  pure step / postgres insert               {mint['pure_step_ms'] / floor['postgres_insert_ms']:6.2f}x"
    )
    print(
        f"  api_call step / activity round trip       {mint['api_call_step_ms'] / floor['activity_round_trip_ms']:6.2f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
