"""kill -9 of a worker mid-run loses nothing and duplicates nothing; a new worker resumes within seconds."""

import asyncio
import contextlib
import signal
import time
import uuid
from collections.abc import AsyncIterator

import httpx

from contracts.temporal import RUN_STEPS_IN_WORKER
from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.local_http import LocalServer, ok
from tests.stack import BackgroundStack, spawn_worker, stop_process

STEPS = 6


def _slowly(request):
    time.sleep(0.7)
    return ok(request)


class Crashable:
    """An API, a worker process to kill and a task of `steps` calls of one api_call tool at `url`."""

    def __init__(self, postgres_url: str, temporal_env, api_key: str):
        self.postgres_url, self.address = postgres_url, temporal_address(temporal_env)
        self.queue = f"crash-{uuid.uuid4()}"
        self.api_stack = BackgroundStack(postgres_url, self.address, task_queue=self.queue, run_worker=False)
        self.headers = {"Authorization": f"Bearer {api_key}"}
        self.workers: list = []

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[httpx.AsyncClient]:
        await asyncio.to_thread(self.api_stack.start)
        self.spawn_worker()
        try:
            async with httpx.AsyncClient(base_url=self.api_stack.url, headers=self.headers) as api:
                yield api
        finally:
            for worker in self.workers:
                stop_process(worker)
            await asyncio.to_thread(self.api_stack.stop)

    def spawn_worker(self) -> None:
        self.workers.append(spawn_worker(self.postgres_url, self.address, self.queue))

    def kill_worker(self) -> None:
        self.workers[-1].send_signal(signal.SIGKILL)  # mid-call
        self.workers[-1].wait()


async def _start_calls(api: httpx.AsyncClient, url: str, steps: int) -> dict:
    tool = {"name": "call", "type": "api_call", "api_call": {"url": url}}
    main = [{"tool": "call", "arguments": {}} for _ in range(steps)]
    task = await create_task(
        api, (await create_agent(api))["id"], {"name": "calls", "tools": [tool], "main": main}
    )
    return await start(api, task["id"])


async def _steps_written(api: httpx.AsyncClient, execution_id: str) -> int:
    return sum(t["type"] == "step" for t in await transitions(api, execution_id))


async def _finished_once(api: httpx.AsyncClient, execution_id: str, steps: int) -> None:
    done = await wait_for_status(api, execution_id, timeout=90)
    assert done["status"] == "succeeded", done
    rows = await transitions(api, execution_id)
    assert [r["type"] for r in rows] == ["init"] + ["step"] * steps + ["finish"]
    assert len({r["id"] for r in rows}) == len(rows) == done["transition_count"]


async def test_kill_9_mid_run_resumes_without_loss_or_duplicates(postgres_url, temporal_env, api_key):
    crash = Crashable(postgres_url, temporal_env, api_key)
    with LocalServer(_slowly) as server:
        async with crash.running() as api:
            execution = await _start_calls(api, server.url, STEPS)
            while await _steps_written(api, execution["id"]) < 2:
                await asyncio.sleep(0.1)
            crash.kill_worker()  # mid-call: the third request is in flight
            crash.spawn_worker()
            await _finished_once(api, execution["id"], STEPS)
            # At most the in-flight call ran twice, and with the same idempotency key.
            keys = [r.headers["Idempotency-Key"] for r in server.requests]
            assert len(set(keys)) == STEPS and len(keys) <= STEPS + 1


FAST_STEPS = 60


def _quickly(request):
    time.sleep(0.02)  # fast, but the chain lasts long enough to be killed in its middle
    return ok(request)


async def test_kill_9_mid_chain_of_fast_calls_applies_every_idempotency_key_once(
    postgres_url, temporal_env, api_key
):
    """Fast calls run in the worker (local activities), many in one workflow task; a worker lost mid-chain
    must not make the calls that already answered again (their answers are recorded with the next call)."""
    crash = Crashable(postgres_url, temporal_env, api_key)
    with LocalServer(_quickly) as server:
        async with crash.running() as api:
            execution = await _start_calls(api, server.url, FAST_STEPS)
            while await _steps_written(api, execution["id"]) < 10:
                await asyncio.sleep(0.02)
            crash.kill_worker()
            assert len(server.requests) < FAST_STEPS, (
                "the chain ended before the kill; the test proves nothing"
            )
            crash.spawn_worker()
            await _finished_once(api, execution["id"], FAST_STEPS)
            keys = [r.headers["Idempotency-Key"] for r in server.requests]
            # Every key applied (a server that drops repeats applies each once), and only the call in
            # flight at the kill was sent twice: the answered ones were not made again.
            assert len(set(keys)) == FAST_STEPS
            assert len(keys) <= FAST_STEPS + 1, f"{len(keys) - FAST_STEPS} calls were made again"


FAN_OUT_ITEMS = 200


async def test_kill_9_mid_batch_of_a_fan_out_makes_only_the_calls_in_flight_again(
    postgres_url, temporal_env, api_key
):
    """A map of one api_call runs its calls in batches, recording each answer as it comes; a worker lost
    mid-batch makes the next worker run the batch again, which makes only the calls without an answer."""
    crash = Crashable(postgres_url, temporal_env, api_key)
    tool = {"name": "call", "type": "api_call", "api_call": {"url": "{{ arguments.url }}"}}
    with LocalServer(_quickly) as server:
        async with crash.running() as api:
            step = {
                "over": f"$ list(range({FAN_OUT_ITEMS}))",
                "map": {"tool": "call", "arguments": {"url": f"$ '{server.url}' + str(_)"}},
                "parallelism": 10,
            }
            agent = await create_agent(api)
            task = await create_task(api, agent["id"], {"name": "fan", "tools": [tool], "main": [step]})
            execution = await start(api, task["id"])
            while len(server.requests) < 70:  # in the second batch of 50
                await asyncio.sleep(0.01)
            crash.kill_worker()
            assert len(server.requests) < FAN_OUT_ITEMS, (
                "the fan-out ended before the kill; the test proves nothing"
            )
            crash.spawn_worker()
            done = await wait_for_status(api, execution["id"], timeout=90)
            assert done["status"] == "succeeded", done
            rows = await transitions(api, execution["id"])
            assert (
                len({r["id"] for r in rows}) == len(rows) == done["transition_count"] == 1 + FAN_OUT_ITEMS + 2
            )
            keys = [r.headers["Idempotency-Key"] for r in server.requests]
            assert len(set(keys)) == FAN_OUT_ITEMS
            # Only the calls in flight at the kill (at most the lane's width, 10) were sent twice.
            assert len(keys) <= FAN_OUT_ITEMS + 10, f"{len(keys) - FAN_OUT_ITEMS} calls were made again"


RUN_CALLS = 40


def _after_50_ms(request):
    time.sleep(0.05)  # the run lasts about 2 s: the kill lands in its middle
    return 200, {}, request.path.encode()


def _chain_of_calls(url: str) -> list[dict]:
    """RUN_CALLS calls, each to the path after the previous answer's, an evaluate step before every third."""
    main: list[dict] = [{"tool": "call", "arguments": {"url": f"$ '{url}' + '0'"}}]
    for i in range(1, RUN_CALLS):
        if i % 3 == 0:
            main.append({"evaluate": {"n": "$ int(_.content[1:]) + 1"}})
            following = "_.n"
        else:
            following = "int(_.content[1:]) + 1"
        main.append({"tool": "call", "arguments": {"url": f"$ '{url}' + str({following})"}})
    return [*main, {"evaluate": {"last": "$ _.content"}}]


async def test_kill_9_mid_run_of_steps_makes_only_the_call_in_flight_again(
    postgres_url, temporal_env, api_key
):
    """`durability: run`: the chain runs in one activity, recording each answer as it comes; a worker lost
    mid-run makes the next worker run it again from its first step, which makes only the call in flight."""
    crash = Crashable(postgres_url, temporal_env, api_key)
    tool = {"name": "call", "type": "api_call", "api_call": {"url": "{{ arguments.url }}"}}
    with LocalServer(_after_50_ms) as server:
        async with crash.running() as api:
            main = _chain_of_calls(server.url)
            task = {"name": "run", "defaults": {"durability": "run"}, "tools": [tool], "main": main}
            task = await create_task(api, (await create_agent(api))["id"], task)
            execution = await start(api, task["id"])
            while len(server.requests) < 15:
                await asyncio.sleep(0.01)
            crash.kill_worker()
            assert len(server.requests) < RUN_CALLS, "the run ended before the kill; the test proves nothing"
            crash.spawn_worker()
            await _finished_once(api, execution["id"], len(main))
            done = await wait_for_status(api, execution["id"])
            assert done["output"] == {"last": f"/{RUN_CALLS - 1}"}, done["output"]
            assert done["transition_count"] == 1 + len(main) + 1  # init, the steps, finish
            rows = await transitions(api, execution["id"])
            assert [r["current"]["step"] for r in rows if r["type"] == "step"] == list(range(len(main)))
            paths = [r.path for r in server.requests]
            assert list(dict.fromkeys(paths)) == [f"/{i}" for i in range(RUN_CALLS)], paths
            keys = [r.headers["Idempotency-Key"] for r in server.requests]
            assert len(set(keys)) == RUN_CALLS
            # Only the call in flight at the kill was sent again, with its key: the answered ones were recorded.
            assert len(keys) <= RUN_CALLS + 1, f"{len(keys) - RUN_CALLS} calls were made again"
            # The chain ran as a run (one local activity), not step by step.
            history = await temporal_env.client.get_workflow_handle(execution["id"]).fetch_history()
            events = b"".join(e.SerializeToString() for e in history.events)
            assert RUN_STEPS_IN_WORKER.encode() in events, "no run in the history"
