"""kill -9 of a worker mid-run loses nothing and duplicates nothing; a new worker resumes within seconds."""

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.stack import BackgroundStack

STEPS = 6


def _slow_server() -> tuple[ThreadingHTTPServer, list[float]]:
    calls: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            calls.append(time.monotonic())
            time.sleep(0.7)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, calls


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


async def test_kill_9_mid_run_resumes_without_loss_or_duplicates(postgres_url, temporal_env, api_key):
    queue = f"crash-{uuid.uuid4()}"
    address = temporal_address(temporal_env)
    server, calls = _slow_server()
    api_stack = BackgroundStack(postgres_url, address, task_queue=queue, run_worker=False)
    await asyncio.to_thread(api_stack.start)
    first = _worker(postgres_url, address, queue)
    second = None
    try:
        async with httpx.AsyncClient(
            base_url=api_stack.url, headers={"Authorization": f"Bearer {api_key}"}
        ) as api:
            url = f"http://127.0.0.1:{server.server_address[1]}/"
            task = await create_task(
                api,
                (await create_agent(api))["id"],
                {
                    "name": "calls",
                    "tools": [{"name": "slow", "type": "api_call", "api_call": {"url": url}}],
                    "main": [{"tool": "slow", "arguments": {}} for _ in range(STEPS)],
                },
            )
            execution = await start(api, task["id"])
            while sum(t["type"] == "step" for t in await transitions(api, execution["id"])) < 2:
                await asyncio.sleep(0.1)
            first.send_signal(signal.SIGKILL)  # mid-call: the third request is in flight
            first.wait()
            second = _worker(postgres_url, address, queue)
            done = await wait_for_status(api, execution["id"], timeout=90)
            assert done["status"] == "succeeded", done
            rows = await transitions(api, execution["id"])
            assert [r["type"] for r in rows] == ["init"] + ["step"] * STEPS + ["finish"]
            assert len({r["id"] for r in rows}) == len(rows) == done["transition_count"]
            assert STEPS <= len(calls) <= STEPS + 1  # at most the in-flight call ran twice (at least once)
    finally:
        for process in (first, second):
            if process and process.poll() is None:
                process.terminate()
                process.wait(10)
        await asyncio.to_thread(api_stack.stop)
        server.shutdown()
        server.server_close()
