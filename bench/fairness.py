"""Fairness between tenants: one tenant's flood of slow calls against another's quick executions.

Run: python -m bench.fairness [--flood N] [--slots S] [--cap C] [--quick K] [--in-worker] [--hog H]
(starts its own embedded Postgres and Temporal dev server, with fairness on as `mint up` has it)

Tenant A starts N executions that each make one slow api_call (a local HTTP server that sleeps SLOW_SECONDS),
more than the worker has activity slots (S, set low so that a small N floods it). Tenant B starts K quick
executions together (an evaluate and a fast api_call) on an idle system, then again while A's flood is in
flight. B's p50 latency under the flood against idle, as a ratio, is the result; the bench runs it with
fairness off (no key, no cap), with the fairness keys only (each execution carries its developer as
Temporal's fairness key), and with the keys and at most C calls of one developer in flight per worker
(activities/tenant_limits.py).

With --hog H, H processes spin on the CPU for the whole run (idle phase included), as other work on a shared
machine would: the question is then whether the flood costs B more than the machine's load costs everyone.

Both tenants' calls go through the task queue (`local: false`), as the issue's slow tool did; with
--in-worker they run where Mint puts them by default, in the worker (local activities), which no task queue
orders: the worker admits them, fairly (see the README's Fairness between tenants). --slots is then the calls
the worker runs at once (MINT_WORKER_MAX_LOCAL_ACTIVITIES).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx

from contracts.json import JsonObject
from tests.helpers import TERMINAL, api_client, start, wait_for_status
from tests.local_http import Answer, LocalServer, Request
from tests.stack import LocalMint

SLOW_SECONDS = 2.0


def answer(request: Request) -> Answer:
    """/slow sleeps SLOW_SECONDS (the server answers each request on a thread of its own); the rest at once."""
    if request.path.startswith("/slow"):
        time.sleep(SLOW_SECONDS)
    return 200, {"Content-Type": "application/json"}, b'{"ok": true}'


def slow_task(url: str, local: bool | None) -> JsonObject:
    tool: JsonObject = {
        "name": "slow",
        "type": "api_call",
        "api_call": {"method": "GET", "url": url + "slow"},
    }
    step: JsonObject = {"tool": "slow", "arguments": {}}
    if local is not None:
        step["local"] = local
    return {"name": "flood", "tools": [tool], "main": [step]}


def quick_task(url: str, local: bool | None) -> JsonObject:
    tool: JsonObject = {
        "name": "fast",
        "type": "api_call",
        "api_call": {"method": "GET", "url": url + "fast"},
    }
    step: JsonObject = {"tool": "fast", "arguments": {}}
    if local is not None:
        step["local"] = local
    return {"name": "quick", "tools": [tool], "main": [{"evaluate": {"x": "$ 1 + 1"}}, step]}


async def make_task(api: httpx.AsyncClient, doc: JsonObject) -> str:
    agent = (await api.post("/agents", json={"name": "fairness"})).json()
    response = await api.post(f"/agents/{agent['id']}/tasks", json=doc)
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def quick_run(api: httpx.AsyncClient, task_id: str) -> float:
    """One of B's executions, start to end (seen by polling every 20 ms), in seconds."""
    started = time.monotonic()
    execution = await start(api, task_id)
    done = await wait_for_status(api, execution["id"], timeout=300, every=0.02)
    assert done["status"] == "succeeded", done
    return time.monotonic() - started


@dataclass
class Flood:
    """A's executions in flight: started, and watched until each ends (`ended`: when it was seen to)."""

    ids: list[str]
    ended: list[float] = field(default_factory=list)
    watch: asyncio.Task[None] | None = None

    @property
    def in_flight(self) -> int:
        return len(self.ids) - len(self.ended)


async def start_flood(api: httpx.AsyncClient, task_id: str, n: int) -> Flood:
    """Start A's n executions of `task_id` and watch them (one list request every 100 ms, not one per
    execution: polling must not be the load that slows B)."""
    ids = [e["id"] for e in await asyncio.gather(*(start(api, task_id) for _ in range(n)))]
    flood = Flood(ids)

    async def watch() -> None:
        seen: set[str] = set()
        while len(seen) < n:
            await asyncio.sleep(0.1)
            listed = await api.get(f"/tasks/{task_id}/executions", params={"limit": 1000})
            for execution in listed.json()["items"]:
                if execution["status"] in TERMINAL and execution["id"] in ids and execution["id"] not in seen:
                    assert execution["status"] == "succeeded", execution
                    seen.add(execution["id"])
                    flood.ended.append(time.monotonic())

    flood.watch = asyncio.create_task(watch())
    return flood


async def until_busy(flood: Flood, slots: int) -> None:
    """Until the flood has been in flight long enough to hold the worker's slots (its first calls are made)."""
    await asyncio.sleep(min(SLOW_SECONDS / 2, 1.0))
    assert flood.in_flight >= slots, "the flood ended before B ran: raise --flood"


@dataclass
class Result:
    idle: list[float]
    flooded: list[float]
    flood_seconds: float

    @property
    def ratio(self) -> float:
        return statistics.median(self.flooded) / statistics.median(self.idle)


async def experiment(
    api_a: httpx.AsyncClient,
    api_b: httpx.AsyncClient,
    url: str,
    flood: int,
    quick: int,
    slots: int,
    local: bool | None,
) -> Result:
    slow_id = await make_task(api_a, slow_task(url, local))
    quick_id = await make_task(api_b, quick_task(url, local))
    await quick_run(api_b, quick_id)  # warm up: the first run of a task pays for caches
    # B's executions start together, so that they all meet A's backlog (one after another, only the first
    # would: the backlog is in the worker's slots by the time the second starts).
    idle = list(await asyncio.gather(*(quick_run(api_b, quick_id) for _ in range(quick))))
    began = time.monotonic()
    flooding = await start_flood(api_a, slow_id, flood)
    await until_busy(flooding, slots)
    flooded = list(await asyncio.gather(*(quick_run(api_b, quick_id) for _ in range(quick))))
    assert flooding.watch is not None
    await flooding.watch
    return Result(idle, flooded, max(flooding.ended) - began)


# (label, fairness keys, calls in flight per developer: None for --cap)
MODES = (("fairness off", False, 0), ("fairness keys only", True, 0), ("keys and the cap", True, None))


async def run_mode(
    local_mint: LocalMint,
    keys: tuple[str, str],
    args: argparse.Namespace,
    mode: tuple[str, bool, int | None],
) -> Result:
    label, fair, cap = mode
    stack = await local_mint.stack(
        task_queue=f"fairness-{label.replace(' ', '-')}",
        fairness=fair,
        max_calls_per_developer=args.cap if cap is None else cap,
        worker_max_activities=args.slots,
        worker_max_local_activities=args.slots,
        max_executions_in_flight=10 * args.flood,
    )
    with LocalServer(answer) as server:
        async with api_client(stack.url, keys[0], 60) as a, api_client(stack.url, keys[1], 60) as b:
            local = None if args.in_worker else False
            return await experiment(a, b, server.url, args.flood, args.quick, args.slots, local)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flood", type=int, default=60, help="tenant A's slow executions (N > slots)")
    parser.add_argument("--slots", type=int, default=20, help="the worker's activity slots, each kind")
    parser.add_argument("--cap", type=int, default=5, help="calls in flight per developer, fairness on")
    parser.add_argument("--quick", type=int, default=5, help="tenant B's quick executions, each phase")
    parser.add_argument("--in-worker", action="store_true", help="calls run in the worker (Mint's default)")
    parser.add_argument("--modes", default="", help="only the modes whose label contains this")
    parser.add_argument("--hog", type=int, default=0, help="CPU-bound processes running beside the bench")
    return parser.parse_args()


@contextlib.contextmanager
def cpu_hog(processes: int) -> Iterator[None]:
    """`processes` busy loops beside the bench (other work on the same cores), stopped on the way out."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


async def main() -> None:
    from infra.store.tables import Store

    args = _arguments()
    local_mint = await LocalMint().start()
    try:
        store = Store(local_mint.pool)
        keys = ((await store.create_developer("tenant-a"))[1], (await store.create_developer("tenant-b"))[1])
        with cpu_hog(args.hog):
            modes = [mode for mode in MODES if args.modes in mode[0]]
            results = {mode: await run_mode(local_mint, keys, args, mode) for mode in modes}
    finally:
        await local_mint.close()
    where = "in the worker" if args.in_worker else "through the task queue"
    print(
        f"tenant A: {args.flood} executions of one {SLOW_SECONDS:g} s api_call; worker slots {args.slots}; "
        f"tenant B: {args.quick} quick executions (evaluate + api_call), calls {where}; "
        f"{args.hog} CPU hog(s) beside it"
    )
    for (label, _, cap), result in results.items():
        label += f" ({args.cap})" if cap is None else ""
        flooded = ", ".join(f"{x * 1000:.0f}" for x in sorted(result.flooded))
        print(
            f"  {label:24} B p50 idle {statistics.median(result.idle) * 1000:6.0f} ms, under A's flood "
            f"{statistics.median(result.flooded) * 1000:6.0f} ms: ratio {result.ratio:6.2f}x "
            f"(A's flood took {result.flood_seconds:5.1f} s; B under it: {flooded} ms)"
        )


if __name__ == "__main__":
    asyncio.run(main())
