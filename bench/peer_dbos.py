"""DBOS in bench/peers.py: the workloads as DBOS workflows and steps (async, as DBOS's docs write them),
with DBOS's system database in a database of its own on the bench's Postgres."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version

import httpx
from dbos import DBOS, DBOSConfig, Queue

from bench.peer_timing import elapsed_s, marginal_ms, median_ms, start_ms

# How often the queue's poller looks for work: DBOS's default is 1 s, which would make 1,000 items at 50 a
# time take 20 s of waiting; 10 ms is what a latency-minded user would set (the README says which).
QUEUE_POLL_SECONDS = 0.01

_http: httpx.AsyncClient | None = None
_queue: Queue | None = None


def _client() -> httpx.AsyncClient:
    global _http
    _http = _http or httpx.AsyncClient()  # one client, keep-alive, as the other systems have
    return _http


@DBOS.step()
async def add_one(value: int) -> int:
    return value + 1


@DBOS.step()
async def fetch(url: str) -> int:
    return (await _client().get(url)).status_code


@DBOS.workflow()
async def chain(steps: int) -> int:
    value = 0
    for _ in range(steps):
        value = await add_one(value)
    return value


@DBOS.workflow()
async def fetch_chain(url: str, steps: int) -> int:
    status = 0
    for _ in range(steps):
        status = await fetch(url)
    return status


@DBOS.workflow()
async def gather_fan_out(url: str, items: int, parallelism: int) -> int:
    """Every item a step, at most `parallelism` in flight (they start in a fixed order: the semaphore is FIFO)."""
    window = asyncio.Semaphore(parallelism)

    async def one() -> int:
        async with window:
            return await fetch(url)

    return len(await asyncio.gather(*[one() for _ in range(items)]))


@DBOS.workflow()
async def fetch_workflow(url: str) -> int:
    return await fetch(url)


@DBOS.workflow()
async def queue_fan_out(url: str, items: int) -> int:
    """Every item a workflow on a queue whose concurrency is the window (DBOS's queue tutorial's shape)."""
    assert _queue is not None
    handles = [await _queue.enqueue_async(fetch_workflow, url) for _ in range(items)]
    return len([await handle.get_result() for handle in handles])


class Dbos:
    name = "DBOS"
    notes = (
        "DBOS: async @DBOS.workflow / @DBOS.step functions in this process; every step's result is written "
        "to the system database before the next step runs; workflows are called directly (start: "
        f"start_workflow_async); queue: concurrency 50, polled every {QUEUE_POLL_SECONDS * 1000:.0f} ms "
        "(DBOS's default is 1 s).",
    )

    def __init__(self, database_url: str, url: str):
        self.database_url, self.url = database_url, url
        self.version = f"dbos {version('dbos')}"

    async def start(self) -> None:
        config: DBOSConfig = {
            "name": "mint-peers",
            "system_database_url": self.database_url,
            "log_level": "WARNING",
        }
        DBOS(config=config)
        await asyncio.to_thread(DBOS.launch)
        global _queue
        _queue = await DBOS.register_queue_async(
            "fan-out", global_concurrency=50, polling_interval_sec=QUEUE_POLL_SECONDS
        )

    async def close(self) -> None:
        await asyncio.to_thread(DBOS.destroy)
        # DBOS made its thread pool this loop's default executor and has just shut it down.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
        if _http is not None:
            await _http.aclose()

    def measures(self) -> dict:
        url = self.url
        return {
            "pure": lambda: marginal_ms(chain, 100),
            "http": lambda: marginal_ms(lambda n: fetch_chain(url, n), 20),
            "fan_out": lambda: elapsed_s(lambda: gather_fan_out(url, 1000, 50)),
            "fan_out_queue": lambda: elapsed_s(lambda: queue_fan_out(url, 1000)),
            "start": lambda: start_ms(
                lambda: DBOS.start_workflow_async(chain, 1), lambda handle: handle.get_result()
            ),
            "one_step": lambda: median_ms(lambda: chain(1)),
        }
