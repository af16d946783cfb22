"""Chaos: 50 executions run while their worker is killed with SIGKILL ten times.

All succeed, no transition is written twice, and the side effects a test server sees happen once per
idempotency key (calls are retried with the same key, so a server can drop repeats).
"""

import asyncio
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.stack import BackgroundStack

EXECUTIONS = 50
KILLS = 10
CALLS_PER_EXECUTION = 4  # one call, then a map of three calls


def _effects_server() -> tuple[ThreadingHTTPServer, Counter]:
    seen: Counter = Counter()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen[self.headers.get("Idempotency-Key")] += 1
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def _worker(postgres_url: str, address: str, queue: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "MINT_DATABASE_URL": postgres_url,
        "TEMPORAL_ADDRESS": address,
        "MINT_TASK_QUEUE": queue,
        "MINT_EGRESS_ALLOW": "127.0.0.1",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "mint.cli", "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _task(url: str) -> dict:
    return {
        "name": "chaos",
        "tools": [{"name": "effect", "type": "api_call", "api_call": {"method": "POST", "url": url}}],
        "main": [
            {"tool": "effect", "arguments": {"json": {"n": "$ _['n']"}}},
            {"sleep": {"seconds": 1}},
            {
                "over": "$ [1, 2, 3]",
                "map": {"tool": "effect", "arguments": {"json": {"item": "$ _"}}},
                "parallelism": 2,
            },
            {"evaluate": {"calls": "$ len(_) + 1"}},
        ],
    }


async def test_fifty_executions_survive_ten_kills(postgres_url, temporal_env, api_key):
    queue = f"chaos-{uuid.uuid4()}"
    address = temporal_address(temporal_env)
    server, seen = _effects_server()
    api_stack = BackgroundStack(postgres_url, address, task_queue=queue, run_worker=False)
    await asyncio.to_thread(api_stack.start)
    worker = _worker(postgres_url, address, queue)
    try:
        async with httpx.AsyncClient(
            base_url=api_stack.url, headers={"Authorization": f"Bearer {api_key}"}, timeout=30
        ) as api:
            task = await create_task(
                api, (await create_agent(api))["id"], _task(f"http://127.0.0.1:{server.server_address[1]}/")
            )
            executions = [await start(api, task["id"], {"n": n}) for n in range(EXECUTIONS)]
            for _ in range(KILLS):
                await asyncio.sleep(1.5)
                worker.send_signal(signal.SIGKILL)
                worker.wait()
                worker = _worker(postgres_url, address, queue)
            for execution in executions:
                done = await wait_for_status(api, execution["id"], timeout=300)
                assert done["status"] == "succeeded", done
                assert done["output"] == {"calls": CALLS_PER_EXECUTION}
                rows = await transitions(api, execution["id"])
                assert len({r["id"] for r in rows}) == len(rows) == done["transition_count"]
                assert [r["type"] for r in rows][0] == "init" and rows[-1]["type"] == "finish"
                assert sum(r["current"]["workflow"] == "main[2].map" for r in rows) == 3
        assert None not in seen
        assert len(seen) == EXECUTIONS * CALLS_PER_EXECUTION  # one key per call, however often it was sent
    finally:
        if worker.poll() is None:
            worker.terminate()
            worker.wait(10)
        await asyncio.to_thread(api_stack.stop)
        server.shutdown()
        server.server_close()
