"""Restarting the Temporal dev server under a running execution loses nothing (its state is on disk)."""

import asyncio
import tempfile
import uuid
from pathlib import Path

import httpx

from mint import services
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.local_http import LocalServer
from tests.stack import BackgroundStack, free_port


async def test_a_temporal_restart_mid_run_loses_nothing(postgres_url, api_key):
    data_dir = Path(tempfile.mkdtemp(prefix="mint-temporal-"))
    port = free_port()
    temporal = await asyncio.to_thread(services.start_temporal, data_dir, port, free_port(), True)
    stack = BackgroundStack(postgres_url, f"127.0.0.1:{port}", task_queue=f"temporal-restart-{uuid.uuid4()}")
    await asyncio.to_thread(stack.start)
    try:
        with LocalServer() as effects:
            async with httpx.AsyncClient(
                base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}
            ) as api:
                task = await create_task(
                    api,
                    (await create_agent(api))["id"],
                    {
                        "name": "through a Temporal restart",
                        "tools": [{"name": "call", "type": "api_call", "api_call": {"url": effects.url}}],
                        "main": [
                            {"tool": "call", "arguments": {}},
                            {"sleep": {"seconds": 3}},
                            {"tool": "call", "arguments": {}},
                        ],
                    },
                )
                execution = await start(api, task["id"])
                while len(await transitions(api, execution["id"])) < 2:
                    await asyncio.sleep(0.1)
                await asyncio.to_thread(services.stop_process, temporal)
                await asyncio.sleep(2)
                temporal = await asyncio.to_thread(services.start_temporal, data_dir, port, free_port(), True)
                done = await wait_for_status(api, execution["id"], timeout=120)
                assert done["status"] == "succeeded", done
                rows = await transitions(api, execution["id"])
                assert [r["type"] for r in rows] == ["init", "step", "step", "step", "finish"]
                assert len({r.headers["Idempotency-Key"] for r in effects.requests}) == 2
    finally:
        await asyncio.to_thread(stack.stop)
        services.stop_process(temporal)
