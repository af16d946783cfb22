"""CPU per request on the API's request paths, measured as CPU (not wall time, which a busy machine blurs):
an execution's start (`POST /tasks/{id}/executions`) beside a raw `start_workflow`, and a chat, streamed and
not, beside the OpenAI SDK calling the same local model server.

Run: python -m bench.api_cpu [--requests N] [--profile start|chat|chat_stream] [--top N] [--sort KEY]
     python -m bench.api_cpu --chat-latency --requests 12   (the peers bench's chat rows alone)
The API runs in a thread of this process (as `mint up` runs it, the worker in a process of its own); its
thread's CPU per request is read from the thread's own clock, and the process's too (this client, the API,
the Temporal client's core threads). --profile prints the API thread's cProfile of that path, by own time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable

import httpx
from openai import AsyncOpenAI

from bench import chat_timing
from bench.model_server import TimedModelServer
from bench.peer_workflows import ComputeChainWorkflow
from tests.stack import BackgroundStack, LocalMint, spawn_worker, stop_process

QUEUE = "api-cpu"


class ThreadClock:
    """CPU time of the stack's thread (the API's event loop), read from another thread."""

    def __init__(self, stack: BackgroundStack):
        ident = stack._thread.ident
        assert ident is not None
        self.clock = time.pthread_getcpuclockid(ident)

    def now(self) -> float:
        return time.clock_gettime(self.clock)


async def per_request(
    run: Callable[[], Awaitable[object]], count: int, clock: ThreadClock | None
) -> dict[str, float]:
    """`count` runs one after another: ms of the API thread's CPU, of the process's CPU and of wall time,
    each per run."""
    await run()  # warm
    api, process, wall = clock.now() if clock else 0.0, time.process_time(), time.perf_counter()
    for _ in range(count):
        await run()
    return {
        "api_thread_cpu": (clock.now() - api) * 1000 / count if clock else 0.0,
        "process_cpu": (time.process_time() - process) * 1000 / count,
        "wall": (time.perf_counter() - wall) * 1000 / count,
    }


async def profiled(
    stack: BackgroundStack, run: Callable[[], Awaitable[object]], count: int, top: int, sort: str
) -> str:
    """The API thread's cProfile over `count` runs, its `top` functions by `sort` (pstats' keys), in the
    thread's CPU seconds."""
    profile = cProfile.Profile(time.thread_time)  # CPU, not wall time (which includes waits for the CPU)
    loop = stack._loop
    assert loop is not None

    async def toggle(on: bool) -> None:
        profile.enable() if on else profile.disable()

    asyncio.run_coroutine_threadsafe(toggle(True), loop).result()
    for _ in range(count):
        await run()
    asyncio.run_coroutine_threadsafe(toggle(False), loop).result()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats(sort).print_stats(top)
    return out.getvalue()


async def setup(api: httpx.AsyncClient) -> tuple[str, str]:
    """A one-step task and a session (one agent, one user), by id."""
    agent = (await api.post("/agents", json={"name": "cpu", "model": "gpt-4o-mini"})).json()
    user = (await api.post("/users", json={"name": "Ada"})).json()
    task = await api.post(
        f"/agents/{agent['id']}/tasks", json={"name": "one", "main": [{"evaluate": {"i": "$ 1"}}]}
    )
    session = await api.post("/sessions", json={"agent": agent["id"], "user": user["id"]})
    assert task.status_code == 201 and session.status_code == 201, (task.text, session.text)
    return task.json()["id"], session.json()["id"]


async def chat_latencies(
    model: TimedModelServer, api: httpx.AsyncClient, session_id: str, direct: AsyncOpenAI, count: int
) -> str:
    """The peers bench's chat rows alone, on this quiet stack: the medians of `count` runs of its medians."""
    runs = [await chat_timing.chat_measures(model, api, session_id, direct) for _ in range(count)]
    lines = [f"  {name:26s} {statistics.median(r[name] for r in runs):6.2f} ms" for name in runs[0]]
    return f"chat latency, medians of {count} runs of {chat_timing.REPS} calls:\n" + "\n".join(lines)


async def main(count: int, profile: str | None, top: int, sort: str, chat_latency: bool = False) -> None:
    local = await LocalMint().start()
    worker = None
    try:
        with TimedModelServer() as model:
            stack = await local.stack(
                run_worker=False, task_queue=QUEUE, openai_api_key="sk-bench", openai_base_url=model.base_url
            )
            address = local.env.client.service_client.config.target_host
            worker = spawn_worker(local.database_url, address, QUEUE)
            direct = AsyncOpenAI(api_key="sk-bench", base_url=model.base_url)
            async with local.api(stack) as api:
                task_id, session_id = await setup(api)
                paths: dict[str, Callable[[], Awaitable[object]]] = {
                    "start": lambda: api.post(f"/tasks/{task_id}/executions", json={"input": {}}),
                    "chat": lambda: chat_timing.mint_answer(api, session_id),
                    "chat_stream": lambda: chat_timing.mint_stream(api, session_id),
                }
                if profile:
                    print(await profiled(stack, paths[profile], count, top, sort))
                    return
                if chat_latency:
                    print(await chat_latencies(model, api, session_id, direct, count))
                    return
                clock = ThreadClock(stack)
                client = local.env.client
                floors: dict[str, Callable[[], Awaitable[object]]] = {
                    "raw start_workflow": lambda: client.start_workflow(
                        ComputeChainWorkflow.run, 1, id=f"cpu-{uuid.uuid4()}", task_queue="api-cpu-raw"
                    ),
                    "SDK chat (direct)": lambda: chat_timing.direct_answer(direct),
                    "SDK chat stream (direct)": lambda: chat_timing.direct_stream(direct),
                }
                print(f"{count} requests each; load average before {os.getloadavg()}")
                for name, run in paths.items():
                    print(f"  Mint {name:26s}", _line(await per_request(run, count, clock)))
                for name, run in floors.items():
                    print(f"  {name:31s}", _line(await per_request(run, count, None)))
                print(f"load average after {os.getloadavg()}")
    finally:
        stop_process(worker)
        await local.close()


def _line(values: dict[str, float]) -> str:
    return "   ".join(f"{name} {value:6.2f} ms" for name, value in values.items() if value)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--profile", choices=("start", "chat", "chat_stream"))
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--sort", default="tottime", help="pstats' key: tottime, cumulative, ncalls, ...")
    parser.add_argument(
        "--chat-latency", action="store_true", help="the peers bench's chat rows alone (--requests runs)"
    )
    arguments = parser.parse_args()
    asyncio.run(
        main(arguments.requests, arguments.profile, arguments.top, arguments.sort, arguments.chat_latency)
    )
