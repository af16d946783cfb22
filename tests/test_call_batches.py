"""A map_reduce whose body is one api_call step makes its calls in batches of the worker's
(workflows/call_batches.py): against a real HTTP server, at most `parallelism` calls at once, every item's
answer in order, and a failure worded as the same call's alone. A worker killed mid-batch: tests/test_crash.py."""

import asyncio
import threading
import time

from tests.helpers import create_agent, create_task, run_task, start, wait_for_status
from tests.local_http import LocalServer


class Counting:
    """Answers each request with its path after `delay` seconds, counting the most requests at once."""

    def __init__(self, delay: float, slow: dict[str, float] | None = None):
        self.delay, self.slow = delay, slow or {}
        self.lock = threading.Lock()
        self.running = self.most = 0

    def __call__(self, request):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(self.slow.get(request.path, self.delay))
            return 200, {}, request.path.encode()
        finally:
            with self.lock:
                self.running -= 1


def echo_task(url: str, items: int, parallelism: int, step: dict | None = None, alone: bool = False) -> dict:
    call = {"tool": "echo", "arguments": {"n": "$ _"}, **(step or {})}
    return {
        "name": "batched calls",
        "tools": [{"name": "echo", "type": "api_call", "api_call": {"url": url + "{{ arguments.n }}"}}],
        "main": [
            {
                "over": f"$ list(range({items}))",
                # A second step makes the body more than one call: each item's call is then its own.
                "map": [call, {"evaluate": {"content": "$ _.content"}}] if alone else call,
                "parallelism": parallelism,
                "reduce": "$ results + [int(_['content'].lstrip('/'))]",
            }
        ],
    }


async def test_a_map_of_one_call_makes_at_most_parallelism_calls_at_once_and_keeps_order(api):
    counting = Counting(delay=0.02)
    with LocalServer(counting) as server:
        execution, rows = await run_task(api, echo_task(server.url, 120, 7))
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == list(range(120))
    assert 1 < counting.most <= 7
    assert len({r.headers["Idempotency-Key"] for r in server.requests}) == 120
    items = [r for r in rows if r["type"] == "step" and "item" in r["metadata"]]
    assert sorted(r["metadata"]["item"] for r in items) == list(range(120))
    assert execution["transition_count"] == 1 + 120 + 2


async def test_a_batched_call_that_times_out_fails_in_the_words_of_the_call_alone(api):
    counting = Counting(delay=0.0, slow={"/2": 3.0})
    step = {"timeout": 1, "retry": {"max_attempts": 1}}
    with LocalServer(counting) as server:
        batched, _ = await run_task(api, echo_task(server.url, 4, 4, step))
        alone, _ = await run_task(api, echo_task(server.url, 4, 4, step, alone=True))
    assert batched["status"] == alone["status"] == "failed"
    assert "timed out after 1 s, attempt 1 of 1" in batched["error"]
    assert batched["error"] == alone["error"]


async def test_a_cancel_mid_batch_ends_the_execution_and_its_calls_stop(api):
    counting = Counting(delay=0.3)
    with LocalServer(counting) as server:
        agent = await create_agent(api)
        task = await create_task(api, agent["id"], echo_task(server.url, 40, 2))
        execution = await start(api, task["id"])
        while len(server.requests) < 3:
            await asyncio.sleep(0.02)
        await api.put(f"/executions/{execution['id']}", json={"status": "cancelled"})
        done = await wait_for_status(api, execution["id"])
        assert done["status"] == "cancelled"
        made = len(server.requests)
        await asyncio.sleep(1.0)  # 3 more rounds of two calls, had the batch gone on
        assert len(server.requests) <= made + 2 and made < 40


async def test_an_item_that_fails_before_its_call_fails_the_map_and_nothing_waits_for_it(api):
    with LocalServer(Counting(delay=0.0)) as server:
        spec = echo_task(server.url, 10, 5, {"arguments": {"n": "$ 1 // (_ - 6)"}})
        execution, _ = await run_task(api, spec)
    assert execution["status"] == "failed"
    assert "ZeroDivisionError" in execution["error"] or "division" in execution["error"]


async def test_a_map_over_nothing_is_an_empty_list(api):
    with LocalServer(Counting(delay=0.0)) as server:
        execution, _ = await run_task(api, echo_task(server.url, 0, 5))
    assert execution["status"] == "succeeded" and execution["output"] == []
    assert server.requests == []


async def test_large_answers_fill_batches_early_and_every_item_gets_its_own(api):
    big = b"x" * (1536 * 1024)  # 1.5 MB: a batch stops after two (activities/call_batches.py)
    with LocalServer(lambda request: (200, {}, request.path.encode() + big)) as server:
        spec = echo_task(server.url, 6, 2)
        spec["main"][0]["reduce"] = "$ results + [_['content'][:2]]"
        execution, _ = await run_task(api, spec)
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == [f"/{i}" for i in range(6)]
    assert len(server.requests) == 6
