"""SIGTERM to a worker mid-call: the call in flight finishes within the grace period (MINT_SHUTDOWN_GRACE_SECONDS),
its answer is kept, and the next worker carries on: no call lost, none made twice."""

from __future__ import annotations

import collections
import signal
import threading
import time
import uuid

import httpx
import pytest

from infra.settings import Settings
from process.cli import _stop_deadline
from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.local_http import LocalServer, Request, ok
from tests.stack import BackgroundStack, spawn_worker, stop_process

# Long enough for the slow call to finish inside it.
GRACE_SECONDS = 30.0
CALL_SECONDS = 3.0


class SlowTool:
    """An HTTP tool that takes CALL_SECONDS and counts the requests per Idempotency-Key."""

    def __init__(self) -> None:
        self.seen: collections.Counter[str] = collections.Counter()
        self.arrived = threading.Event()

    def __call__(self, request: Request):
        self.seen[request.headers["Idempotency-Key"]] += 1
        self.arrived.set()
        time.sleep(CALL_SECONDS)
        return ok(request)


@pytest.mark.parametrize(
    ("where", "timeout"),
    [("in the worker", None), ("as a queued activity", 120)],
)
async def test_sigterm_mid_call_lets_it_finish_and_the_next_worker_carries_on(
    postgres_url, temporal_env, api_key, tmp_path, where, timeout
):
    queue = f"shutdown-{uuid.uuid4()}"
    address = temporal_address(temporal_env)
    tool = SlowTool()
    env = {"MINT_SHUTDOWN_GRACE_SECONDS": str(GRACE_SECONDS)}
    workers = []
    with LocalServer(tool) as server:
        async with BackgroundStack(postgres_url, address, task_queue=queue, run_worker=False) as stack:
            try:
                headers = {"Authorization": f"Bearer {api_key}"}
                async with httpx.AsyncClient(base_url=stack.url, headers=headers, timeout=30) as api:
                    api_call = {"url": server.url, **({"timeout": timeout} if timeout else {})}
                    spec = {"name": "slow", "type": "api_call", "api_call": api_call}
                    main = [{"tool": "slow", "arguments": {}} for _ in range(2)]
                    agent = await create_agent(api)
                    task = await create_task(
                        api, agent["id"], {"name": "slow", "tools": [spec], "main": main}
                    )
                    workers.append(
                        spawn_worker(postgres_url, address, queue, log=tmp_path / "first.log", **env)
                    )
                    execution = await start(api, task["id"])
                    assert tool.arrived.wait(60), "the first call never arrived"
                    workers[0].send_signal(signal.SIGTERM)  # mid-call
                    deadline = _stop_deadline(Settings(shutdown_grace_seconds=GRACE_SECONDS))
                    code = workers[0].wait(deadline)
                    log = (tmp_path / "first.log").read_text()
                    assert code == 0, log
                    assert "without waiting" not in log, log  # it stopped within its grace period
                    workers.append(
                        spawn_worker(postgres_url, address, queue, log=tmp_path / "second.log", **env)
                    )
                    done = await wait_for_status(api, execution["id"], timeout=120)
                    assert done["status"] == "succeeded", done
                    rows = await transitions(api, execution["id"])
                    assert [r["type"] for r in rows] == ["init", "step", "step", "finish"]
                    # Both calls made, each exactly once: the one in flight at SIGTERM finished and was kept.
                    assert len(tool.seen) == 2 and set(tool.seen.values()) == {1}, (where, tool.seen)
            finally:
                for worker in workers:
                    stop_process(worker)
