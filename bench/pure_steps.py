"""CPU time per pure step: a low-noise measure of the interpreter's own cost, beside raw Python in a workflow.

Run: python -m bench.pure_steps [--steps 100,1000] [--runs 5] [--step JSON] [--profile FILE] [--unsandboxed]

Runs chains of `evaluate` steps through the real workflow (started as the API starts it, on the unit layer's
time-skipping server, with the worker's sandbox and payload converter and the unit layer's fake activities:
tests/unit/harness.py) and raw workflows doing the same dict work in plain Python (bench/pure_workflows.py:
alone, and recording each output as a transition row). It measures CPU time of this process (the workflow, the
worker and the client; not the Temporal server's) and of the workflow thread alone, so a busy machine moves it
far less than wall-clock. Per step: (CPU of an N-step chain - CPU of a 1-step chain) / (N - 1), each the least
of `--runs`. `--profile FILE` writes a cProfile of the workflow thread over Mint's runs (pstats format; its
timer is the thread's CPU clock, which inflates functions called often).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import gc
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import temporalio.converter
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from bench.pure_workflows import PureChainWorkflow, RecordedChainWorkflow
from contracts.json import JsonObject, JsonValue
from contracts.records.executions import Execution
from contracts.records.tasks import TaskVersion
from infra.temporal.payload_codec import MintPayloadConverter
from process import local_services
from process.worker import workflow_runner
from services.executions.launch import launch
from tests.unit.fakes import Fakes, FakeStore
from tests.unit.harness import AGENT, DEVELOPER, Harness, _KeepsHandles
from workflows.registered import WORKFLOWS
from workflows.validate import validate_task

NOW = datetime.now(UTC)


def _validated(spec: JsonObject) -> TaskVersion:
    """The task as the API stores it, validated once (at creation, not per execution, as on `mint up`)."""
    valid = validate_task(spec, frozenset())
    return TaskVersion(str(uuid.uuid4()), 1, str(AGENT["id"]), valid.dialect, valid.document, NOW, NOW)


def chain(steps: int, step: str | None = None) -> JsonObject:
    """The task bench/peers.py runs, `steps` evaluate steps each adding one; or `steps` copies of `step`."""
    main: list[JsonValue] = [
        json.loads(step) if step else {"evaluate": {"i": f"$ {i} + 1"}} for i in range(steps)
    ]
    return {"name": "chain", "main": main}


class _Collections:
    """CPU the garbage collector spends (any thread): part of what a step costs, counted apart too."""

    def __init__(self) -> None:
        self.spent = 0.0
        self._started: float | None = None
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()
        elif self._started is not None:
            self.spent += time.thread_time() - self._started
            self._started = None


COLLECTIONS = _Collections()


class _WorkflowThread:
    """The worker's one workflow thread (workflows run there, not on the event loop): its CPU clock, and a
    cProfile of it (on CPU time, so that waits for the GIL are not counted) while `profiling`."""

    def __init__(self, profile: bool) -> None:
        self.executor = ThreadPoolExecutor(1)
        self.profile = cProfile.Profile(time.thread_time) if profile else None

    async def _in_thread(self, call: Callable[[], Any]) -> Any:
        return await asyncio.wrap_future(self.executor.submit(call))

    async def cpu(self) -> float:
        return float(await self._in_thread(time.thread_time))

    async def profiling(self, on: bool) -> None:
        if self.profile is not None:
            await self._in_thread(self.profile.enable if on else self.profile.disable)


async def cpu_ms(run: Callable[[], Awaitable[Any]], thread: _WorkflowThread) -> tuple[float, float, float]:
    """CPU ms of the process, of the workflow thread and of garbage collections over `run`."""
    start, start_thread, start_gc = time.process_time(), await thread.cpu(), COLLECTIONS.spent
    await run()
    end_thread = await thread.cpu()
    return (
        (time.process_time() - start) * 1000,
        (end_thread - start_thread) * 1000,
        (COLLECTIONS.spent - start_gc) * 1000,
    )


async def per_step(
    run: Callable[[int], Awaitable[Any]], steps: int, runs: int, thread: _WorkflowThread
) -> tuple[float, ...]:
    """CPU ms of a 1-step run, and per step of a `steps`-step run beyond it: the process's, the workflow
    thread's and the garbage collector's."""
    await run(1)
    await run(steps)  # warm up
    ones, many = [], []
    for _ in range(runs):
        ones.append(await cpu_ms(lambda: run(1), thread))
        many.append(await cpu_ms(lambda: run(steps), thread))
    # The least of the runs: contention for the CPU (other processes, hyperthreads) only ever adds CPU time.
    one = min(m[0] for m in ones)
    per_step = [(min(m[i] for m in many) - min(m[i] for m in ones)) / (steps - 1) for i in range(3)]
    return one, *per_step


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", default="100,1000", help="chain lengths, comma-separated")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", help="write a cProfile of the workflow thread here")
    parser.add_argument("--step", help='the step Mint\'s chain repeats, as JSON (e.g. \'{"get": "x"}\')')
    parser.add_argument(
        "--unsandboxed", action="store_true", help="run workflows outside the sandbox (as the unit tests do)"
    )
    args = parser.parse_args()
    lengths = [int(n) for n in args.steps.split(",")]
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=local_services.find_binary("temporal-test-server")
    )
    # Mint's payload conversion (infra/temporal/payload_codec.py; no claim check or encryption here).
    config = env.client.config()
    config["data_converter"] = dataclasses.replace(
        temporalio.converter.default(), payload_converter_class=MintPayloadConverter
    )
    client = Client(**config)
    fakes, queue = Fakes(), f"bench-{uuid.uuid4()}"
    thread = _WorkflowThread(bool(args.profile))
    try:
        async with Worker(
            client,
            task_queue=queue,
            workflows=[*WORKFLOWS, PureChainWorkflow, RecordedChainWorkflow],
            activities=fakes.activities(),
            workflow_runner=UnsandboxedWorkflowRunner() if args.unsandboxed else workflow_runner(),
            workflow_task_executor=thread.executor,
        ):
            harness = Harness(env, queue, fakes)
            harness.temporal = _KeepsHandles(client)

            tasks = {steps: _validated(chain(steps, args.step)) for steps in {1, *lengths}}

            async def mint(steps: int) -> None:
                execution = Execution(str(uuid.uuid4()), "", 1, "queued", {}, {}, NOW, NOW)
                fakes.execution(execution.id)
                store = FakeStore(fakes, AGENT, [])
                await launch(store, harness.temporal, harness.settings, DEVELOPER, tasks[steps], execution)
                outcome = await harness.finish(execution.id)
                assert outcome.status == "succeeded", outcome.error

            async def raw(steps: int) -> None:
                await client.execute_workflow(
                    PureChainWorkflow.run, steps, id=f"raw-{uuid.uuid4()}", task_queue=queue
                )

            async def recorded(steps: int) -> None:
                execution_id = str(uuid.uuid4())
                await client.execute_workflow(
                    RecordedChainWorkflow.run, args=[execution_id, steps], id=execution_id, task_queue=queue
                )

            for steps in lengths:
                for name, run in (("mint evaluate", mint), ("raw python", raw), ("raw recorded", recorded)):
                    await thread.profiling(run is mint)
                    one, step, in_thread, collecting = await per_step(run, steps, args.runs, thread)
                    await thread.profiling(False)
                    print(
                        f"{name:<14} {steps:>5} steps: 1-step run {one:6.2f} ms; per step {step:7.4f} ms "
                        f"(workflow thread {in_thread:7.4f} ms, garbage collection {collecting:7.4f} ms)"
                    )
    finally:
        if thread.profile is not None:
            thread.profile.dump_stats(args.profile)
        thread.executor.shutdown()
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
