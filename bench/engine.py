"""Per-step cost of Mint against the raw Temporal and Postgres floor, measured in the same run.

Run: python -m bench.engine [--plain]   (starts its own embedded Postgres and Temporal dev server)
Prints the floor (no-op activity round trip, local activity, empty workflow, one Postgres insert) and
Mint's cost per step for a chain of 100 evaluate steps and a chain of 20 api_call steps, with ratios.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid

import httpx
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bench.floor_workflows import ActivityWorkflow, EmptyWorkflow, noop
from bench.peer_mint import Watcher
from tests.local_http import LocalServer
from tests.stack import LocalMint

RUNS = 7


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


async def _run_execution(api: httpx.AsyncClient, watcher: Watcher, task_id: str) -> None:
    execution = (await api.post(f"/tasks/{task_id}/executions", json={"input": {}})).json()
    await watcher.wait(execution["id"])


async def measure_mint(api: httpx.AsyncClient, watcher: Watcher, url: str) -> dict[str, float]:
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
        "api_call": {"method": "GET", "url": url},
    }
    calls = await task({"name": "calls", "tools": [tool], "main": [{"tool": "echo", "arguments": {}}] * 20})
    await _run_execution(api, watcher, one)  # warm up
    base = await _median_ms(lambda: _run_execution(api, watcher, one))
    pure = await _median_ms(lambda: _run_execution(api, watcher, chain))
    http = await _median_ms(lambda: _run_execution(api, watcher, calls))
    return {
        "one_step_execution_ms": base,
        "pure_step_ms": (pure - base) / 99,
        "api_call_step_ms": (http - base) / 19,
    }


async def main() -> None:
    # `--plain`: without payload encryption (MINT_ENCRYPTION_KEY unset), to see what encryption costs.
    settings = {"encryption_keys": ()} if "--plain" in sys.argv else {}
    local = await LocalMint().start()
    try:
        stack = await local.stack(**settings)
        with LocalServer() as echo:
            floor = await measure_floor(local.env, local.pool)
            # An execution's end is seen in its row, read every 2 ms, not by polling the API, which shares
            # the stack's event loop with the worker here (as bench/peers.py does).
            watcher = Watcher(local.pool)
            await watcher.start()
            async with local.api(stack) as api:
                mint = await measure_mint(api, watcher, echo.url)
            await watcher.stop()
    finally:
        await local.close()
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
