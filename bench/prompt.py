"""The overhead of a prompt step against calling the same local model server directly, in the same run.

Run: python -m bench.prompt   (starts its own embedded Postgres, Temporal dev server and a local model server)
1. Direct: the openai SDK calling the local server, one call after another (the floor: what the model costs).
2. Mint: a task of 20 prompt steps against the same server; per step, and the overhead per step over direct.
3. The Temporal floor for a durable call: a no-op activity's round trip, measured in the same run.
Medians of alternated rounds, so drift on a noisy machine hits both sides.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx
import openai

from bench.engine import measure_floor
from tests.model_server import ModelServer
from tests.stack import LocalMint

STEPS, ROUNDS = 20, 5


async def direct(server: ModelServer) -> float:
    client = openai.AsyncOpenAI(api_key="bench", base_url=server.openai_base_url, max_retries=0)
    try:
        start = time.perf_counter()
        for i in range(STEPS):
            await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": f"step {i}"}]
            )
        return (time.perf_counter() - start) * 1000 / STEPS
    finally:
        await client.close()


async def through_mint(api: httpx.AsyncClient, task_id: str) -> float:
    start = time.perf_counter()
    execution = (await api.post(f"/tasks/{task_id}/executions", json={"input": {}})).json()
    while (status := (await api.get(f"/executions/{execution['id']}")).json()["status"]) not in (
        "succeeded",
        "failed",
    ):
        await asyncio.sleep(0.01)
    assert status == "succeeded", status
    return (time.perf_counter() - start) * 1000 / STEPS


async def main() -> None:
    local = await LocalMint().start()
    try:
        with ModelServer(lambda call: "ok") as server:
            stack = await local.stack(openai_api_key="bench", openai_base_url=server.openai_base_url)
            async with local.api(stack) as api:
                agent = (await api.post("/agents", json={"name": "bench"})).json()
                doc = {"name": "prompts", "main": [{"prompt": "step {{ _ }}", "unwrap": True}] * STEPS}
                task_id = (await api.post(f"/agents/{agent['id']}/tasks", json=doc)).json()["id"]
                await through_mint(api, task_id)  # warm up both paths once
                await direct(server)
                floor_ms = (await measure_floor(local.env, local.pool))["activity_round_trip_ms"]
                directs, mints = [], []
                for _ in range(ROUNDS):
                    directs.append(await direct(server))
                    mints.append(await through_mint(api, task_id))
    finally:
        await local.close()
    floor, mint = statistics.median(directs), statistics.median(mints)
    print(
        f"prompt step vs the SDK calling the same local model server ({STEPS} sequential calls, median of {ROUNDS}):"
    )
    print(f"  openai SDK directly        {floor:7.2f} ms per call")
    print(
        f"  mint prompt step           {mint:7.2f} ms per step   ratio {mint / floor:5.2f}x, overhead {mint - floor:6.2f} ms"
    )
    print(
        f"  temporal activity floor    {floor_ms:7.2f} ms per round trip "
        f"(the overhead is {(mint - floor) / floor_ms:4.2f} of these)"
    )


if __name__ == "__main__":
    asyncio.run(main())
