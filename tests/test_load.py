"""Load across tenants on a real `mint up`: one tenant's flood of slow chats and executions leaves another
tenant's simple requests answering, everything finishes, and `mint up` still stops cleanly, even
with slow work in flight."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from typing import Any

import httpx

from tests.conftest import OPENAI_KEY
from tests.helpers import TERMINAL, api_client, create_agent, create_task, start
from tests.local_http import LocalServer, Request
from tests.model_server import Call, Reply
from tests.stack import MintUp

CHATS = 50
EXECUTIONS = 200  # half for each tenant


def _tool_server(seconds: dict[str, float]) -> LocalServer:
    """A tool that takes `seconds["delay"]` to answer (changeable while it runs)."""

    def answer(_: Request) -> tuple[int, dict[str, str], bytes]:
        time.sleep(seconds["delay"])
        return 200, {"Content-Type": "application/json"}, b'{"sky": "grey"}'

    return LocalServer(answer)


def _weather_tool(server: LocalServer) -> dict[str, Any]:
    return {"name": "weather", "type": "api_call", "api_call": {"method": "GET", "url": server.url + "w"}}


def _model(call: Call) -> Reply:
    if not any(m["role"] == "tool" for m in call.messages):
        return Reply(tool_calls=[("weather", {})])
    return Reply(content="grey")


async def _chat(api: httpx.AsyncClient, agent_id: str, tool: dict[str, Any]) -> httpx.Response:
    session = (await api.post("/sessions", json={"agent": agent_id, "auto_run_tools": True})).json()
    return await api.post(
        f"/sessions/{session['id']}/chat",
        json={"messages": [{"role": "user", "content": "weather?"}], "tools": [tool]},
    )


async def _run_executions(api: httpx.AsyncClient, task_id: str, count: int) -> list[str]:
    started = await asyncio.gather(*(start(api, task_id, {"n": i}) for i in range(count)))
    statuses = {e["id"]: e["status"] for e in started}
    while set(statuses.values()) - TERMINAL:  # polled as a client would, not as fast as it can
        await asyncio.sleep(1)
        for id_ in [i for i, status in statuses.items() if status not in TERMINAL]:
            statuses[id_] = (await api.get(f"/executions/{id_}")).json()["status"]
    return list(statuses.values())


def _latencies(url: str, key: str, stop: threading.Event) -> list[float]:
    """The other tenant's simple requests, one after another until `stop`, from a thread of their own (so
    that the test's own flood of requests does not delay them on this side)."""
    seen = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as api:
        while not stop.is_set():
            began = time.perf_counter()
            response = api.get("/agents", params={"limit": 10})
            seen.append(time.perf_counter() - began)
            assert response.status_code == 200, response.text
            time.sleep(0.02)
    return seen


def _task(tool: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "slow call",
        "tools": [tool],
        "main": [{"tool": "weather", "arguments": {}}, {"evaluate": {"sky": "$ _.json.sky"}}],
    }


async def test_a_flood_from_one_tenant_leaves_the_other_answering_and_mint_up_stops(
    tmp_path, store, postgres_url, model_server, script
):
    script.reply = _model
    delay = {"delay": 3.0}
    with _tool_server(delay) as tools:
        up = MintUp(
            tmp_path / "data",
            MINT_DATABASE_URL=postgres_url,  # the suite's Postgres, so that the test can make tenants
            OPENAI_API_KEY=OPENAI_KEY,
            OPENAI_BASE_URL=model_server.openai_base_url,
            MINT_EGRESS_ALLOW="127.0.0.1",
            MINT_RATE_LIMIT_PER_MINUTE="0",
            MINT_MAX_CHATS_PER_DEVELOPER=str(CHATS),
            MINT_RECONCILE_INTERVAL="3600",  # the suite's other executions are not this Temporal's
        )
        _, other_key = await store.create_developer("quiet tenant")
        try:
            await asyncio.to_thread(up.start)
            async with api_client(up.url, up.key, 300) as a, api_client(up.url, other_key, 300) as b:
                tool = _weather_tool(tools)
                agent_a, agent_b = await create_agent(a), await create_agent(b)
                task_a = await create_task(a, agent_a["id"], _task(tool))
                task_b = await create_task(b, agent_b["id"], _task(tool))
                stop = threading.Event()
                quiet = asyncio.create_task(asyncio.to_thread(_latencies, up.url, other_key, stop))
                flood = asyncio.gather(
                    asyncio.gather(*(_chat(a, agent_a["id"], tool) for _ in range(CHATS))),
                    _run_executions(a, task_a["id"], EXECUTIONS // 2),
                    _run_executions(b, task_b["id"], EXECUTIONS // 2),
                )
                chats, statuses_a, statuses_b = await flood
                stop.set()
                latencies = await quiet

                assert [c.status_code for c in chats] == [201] * CHATS, {c.text for c in chats}
                assert statuses_a + statuses_b == ["succeeded"] * EXECUTIONS
                # The quiet tenant was answered all along (each request within the client's 30 s, every one
                # a 200); how fast is a figure for bench/, not a threshold here.
                assert len(latencies) > 20

                # Stopping with slow work in flight: chats and calls that would take a minute.
                delay["delay"] = 60.0
                in_flight = [asyncio.create_task(_chat(a, agent_a["id"], tool)) for _ in range(10)]
                in_flight += [asyncio.create_task(start(a, task_a["id"], {})) for _ in range(10)]
                while len(tools.requests) < 5:
                    await asyncio.sleep(0.1)
                code, output = await asyncio.to_thread(up.stop, signal.SIGTERM, 60)  # as `docker stop` does
                for waiting in in_flight:
                    waiting.cancel()
                await asyncio.gather(*in_flight, return_exceptions=True)
        finally:
            delay["delay"] = 0
            up.kill()
    assert code == 0, output
    assert "Mint stopped." in output
    assert up.leftovers() == "", f"processes left running: {up.leftovers()}"
