"""The production topology in processes: `mint api` and `mint worker`, the real commands, configured only by
environment as docs/operations.md says, on a Postgres and a Temporal server that run as processes of their own
(tests/test_topology.py). The test can SIGKILL and restart any of them."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

from tests.stack import TEST_ENCRYPTION_KEY, free_port


class Cluster:
    """`apis` API processes and `workers` worker processes on one task queue (started by `start`); each
    writes to a log in `logs`."""

    def __init__(self, database_url: str, temporal_address: str, logs: Path, apis: int = 2, workers: int = 3):
        self.logs = logs
        # Only what docs/operations.md's Configuration names, nothing inherited from the test's own environment.
        inherited = {k: v for k, v in os.environ.items() if not k.startswith(("MINT_", "TEMPORAL_"))}
        self.env = {
            **inherited,
            "MINT_DATABASE_URL": database_url,
            "TEMPORAL_ADDRESS": temporal_address,
            "MINT_TASK_QUEUE": f"topology-{uuid.uuid4()}",  # the session's in-process worker never steps in
            "MINT_ENCRYPTION_KEY": TEST_ENCRYPTION_KEY,  # the same on every process: each opens what others sealed
            "MINT_EGRESS_ALLOW": "127.0.0.1,localhost",  # the test's HTTP server is on loopback
            "MINT_RATE_LIMIT_PER_MINUTE": "0",  # the test polls fast; the limit has its own test
            # Five processes share the session's Postgres (100 connections) with the rest of the suite.
            "MINT_API_DB_POOL_SIZE": "5",
            "MINT_WORKER_DB_POOL_SIZE": "8",
        }
        self.api_ports = [free_port() for _ in range(apis)]
        self.worker_count = workers
        self.apis: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        self.spawned: dict[int, float] = {}  # a worker's pid -> when it was started (monotonic)

    async def start(self) -> None:
        """Start every process; return once each API serves (workers poll when they are ready)."""
        self.apis = [self._spawn("api", port=p) for p in self.api_ports]
        self.workers = [self._spawn("worker") for _ in range(self.worker_count)]
        for index in range(len(self.apis)):
            await self.healthy(index)

    def api_url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.api_ports[index]}"

    def _spawn(self, kind: str, port: int | None = None) -> subprocess.Popen:
        env = {**self.env, **({"MINT_API_PORT": str(port)} if port else {})}
        with (self.logs / f"{kind}-{port or 'w'}.log").open("ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "process.cli", kind],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.spawned[process.pid] = time.monotonic()
        return process

    def kill_worker(self, index: int) -> float:
        """SIGKILL worker `index` and start a new one in its place; the time of the kill."""
        killed = _kill(self.workers[index])
        self.workers[index] = self._spawn("worker")
        return killed

    def kill_api(self, index: int) -> None:
        """SIGKILL API `index` and start a new one on the same port (not yet serving: see `healthy`)."""
        _kill(self.apis[index])
        self.apis[index] = self._spawn("api", port=self.api_ports[index])

    async def healthy(self, index: int, within: float = 120) -> None:
        """Wait until API `index` answers /healthz."""
        deadline = time.monotonic() + within
        async with httpx.AsyncClient(base_url=self.api_url(index), timeout=2) as client:
            while True:
                assert self.apis[index].poll() is None, f"mint api exited: see {self.logs}"
                try:
                    if (await client.get("/healthz")).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "mint api did not become healthy"
                await asyncio.sleep(0.2)

    def close(self) -> None:
        for process in (*self.apis, *self.workers):
            if process.poll() is None:
                _kill(process)


def _kill(process: subprocess.Popen) -> float:
    process.send_signal(signal.SIGKILL)
    process.wait()
    return time.monotonic()


class Apis:
    """Clients of every API process, taken in turn; one that is down (killed, restarting) is skipped.

    A request that fails because its API died (or answers 503, busy) goes again to the next API. That is safe
    for what the test sends: reads, a start with an `Idempotency-Key` (a repeat returns the execution the
    first one created), and answers to waits (a duplicate resume is dropped)."""

    def __init__(self, cluster: Cluster, key: str):
        self.urls = [cluster.api_url(i) for i in range(len(cluster.api_ports))]
        self.headers = {"Authorization": f"Bearer {key}"}
        self.clients = [self._client(url) for url in self.urls]
        self.up = [True] * len(self.urls)
        self.sent_through = [0] * len(self.urls)  # requests answered by each API
        self.retried = 0  # requests sent again because their API died or was busy
        self._turn = 0

    def _client(self, url: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=url, headers=self.headers, timeout=30)

    def _next(self) -> int:
        self._turn += 1
        for k in range(len(self.clients)):
            index = (self._turn + k) % len(self.clients)
            if self.up[index]:
                return index
        raise AssertionError("no API is up")

    async def request(self, method: str, path: str, via: int | None = None, **kwargs) -> httpx.Response:
        """`via`: the API to try first, if it is up (else the next in turn)."""
        for attempt in range(50):
            index = via if via is not None and attempt == 0 and self.up[via] else self._next()
            try:
                response = await self.clients[index].request(method, path, **kwargs)
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code != 503:
                self.sent_through[index] += 1
                return response
            self.retried += 1
            await asyncio.sleep(0.1 * min(attempt + 1, 10))
        raise AssertionError(f"{method} {path}: no API answered")

    def take_down(self, index: int) -> None:
        """Send nothing more to API `index` (requests in flight there fail and go to another)."""
        self.up[index] = False

    async def bring_up(self, index: int) -> None:
        """API `index` serves again: a new client, since the old one's connections died with the process."""
        await self.clients[index].aclose()
        self.clients[index] = self._client(self.urls[index])
        self.up[index] = True

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()
