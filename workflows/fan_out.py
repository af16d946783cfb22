"""Fan-out steps: foreach, map_reduce and parallel, and the child workflows a large fan-out runs in.

A fan-out runs a body of steps once per item (or branch) through the interpreter's run_sequence; what it
adds is how: in order, in a sliding window, or, once a body of calls over many items would outgrow one
history, in MapChunkWorkflow children of at most CHUNK_ITEMS items each, whose transitions, `state` and
labels the parent adopts. FanOut is a collaborator of one Interpreter and shares its state and log.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable
from typing import Any

from temporalio import workflow

from contracts.executions import ChunkOutcome, MapChunk
from contracts.liveness import WORKFLOW_TASK_TIMEOUT
from contracts.temporal import CALL_API, MAP_CHUNK_WORKFLOW
from workflows import language as lang
from workflows.call_batches import BATCH_PATCH, MAX_BATCHED_ITEMS, CallBatcher
from workflows.calls import CALLS_IN_WORKER_PATCH, call_options, runs_in_worker
from workflows.failures import Returned, StepFailed, failure_message
from workflows.frames import Frame
from workflows.reduce import fold, reduce_results
from workflows.step_runner import StepRunner
from workflows.tool_kinds import ApiCallTool, runs_on_client
from workflows.values import Names

# History events one call (a flush marker, the activity, its workflow task) adds, and the share of a history
# a single fan-out may use (continue-as-new happens only between top-level steps).
EVENTS_PER_CALL = 10
MAX_FAN_OUT_EVENTS = 40_000
# A fan-out (map or foreach) with more items than this, and calls in its body, runs in child workflows
# of at most this many items each: no history nears Temporal's limits, and pending work stays small.
CHUNK_ITEMS = 250
MAX_CHUNKS = 2_000
# A branch that ends while another waits for input or sleeps starts writing its transitions at once, rather
# than when the other wakes; executions that started before this keep the commands their histories hold.
WRITE_ENDED_BRANCHES_PATCH = "write-a-branch-that-ends-beside-a-parked-one"
# A window one item wide runs its items one after another, so a `return` stops the items after it (a chunk
# of a foreach did not: its items were all started at once, and those that never suspended all ran).
SERIAL_WINDOW_PATCH = "a-window-one-item-wide-runs-items-in-turn"


class FanOut:
    """Runs one interpreter's fan-out steps, and its part of a fan-out when it runs in a child workflow."""

    def __init__(self, interpreter: StepRunner):
        self.interpreter = interpreter

    async def foreach(
        self, step: lang.ForeachStep, value: Any, names: Names, frame: Frame, here: str
    ) -> list[Any]:
        """Run `do` for each item, one after another."""
        items = self._items(step.foreach.in_, names, f"{here}.foreach.in")
        path, body = f"{here}.foreach", step.foreach.do
        if size := self._chunk_size(items, body, f"{here}.foreach.in"):
            return await self._in_children(body, items, frame, path, size, parallelism=1)
        results = []
        for i, item in enumerate(items):
            results.append(await self.interpreter.run_sequence(body, item, frame, path, {"item": i}))
        return results

    async def map_reduce(self, step: lang.MapReduceStep, names: Names, frame: Frame, here: str) -> Any:
        """Run `map` for each item, `parallelism` at a time, then fold the results with `reduce`."""
        interpreter = self.interpreter
        items = self._items(step.over, names, f"{here}.over")
        path, parallelism = f"{here}.map", step.parallelism or 100
        batched = self._batched(step.map, len(items))
        if not batched and (size := self._chunk_size(items, step.map, f"{here}.over")):
            results = await self._in_children(step.map, items, frame, path, size, parallelism)
        else:
            results = await self.window(step.map, items, 0, frame, path, parallelism)
        values = interpreter.values
        if interpreter.legacy:  # as histories recorded before appending reduces replay
            if step.reduce is None:
                return results
            initial = values.value(step.initial, names) if step.initial is not None else []
            return fold(values, step.reduce, initial, results, names)
        interpreter.start_budget()  # the reduce's own allowance: the map's last step spent the one before
        initial = values.value(step.initial, names) if step.initial is not None else []
        return reduce_results(values, step.reduce, initial, results, names)

    async def parallel(self, step: lang.ParallelStep, value: Any, frame: Frame, here: str) -> list[Any]:
        """Run every branch on the same input, side by side."""
        branches = [
            self._branch(self.interpreter.run_sequence(b, value, frame, f"{here}.parallel[{i}]"))
            for i, b in enumerate(step.parallel)
        ]
        return await gather(branches)

    async def window(
        self, body: list[Any], items: list[Any], first: int, frame: Frame, path: str, parallelism: int
    ) -> list[Any]:
        """Run `body` for every item, at most `parallelism` at a time; item i is numbered first + i."""
        if self._batched(body, len(items)):
            return await self._in_batches(body, items, first, frame, path, parallelism)
        if parallelism == 1 and self.interpreter.patched(SERIAL_WINDOW_PATCH):
            run = self.interpreter.run_sequence
            return [await run(body, item, frame, path, {"item": first + i}) for i, item in enumerate(items)]
        window = asyncio.Semaphore(parallelism)

        async def one(i: int, item: Any) -> Any:
            async with window:  # a sliding window: a slow item holds only its own slot
                run = self.interpreter.run_sequence(body, item, frame, path, {"item": first + i})
                return await self._branch(run)

        return await gather([one(i, item) for i, item in enumerate(items)])

    async def _in_batches(
        self, body: list[Any], items: list[Any], first: int, frame: Frame, path: str, parallelism: int
    ) -> list[Any]:
        """Run `body` (one api_call step) for every item, the items' calls in batches of the worker's
        (workflows/call_batches.py), at most `parallelism` calls at a time."""
        batcher = CallBatcher(len(items), parallelism, first)
        run = self.interpreter.run_sequence

        async def one(i: int, item: Any) -> Any:
            with batcher.item(i):
                return await self._branch(run(body, item, frame, path, {"item": first + i}))

        with self.interpreter.view.doing(f"{path}: {len(items)} calls, in batches"):
            *results, _ = await gather([*(one(i, item) for i, item in enumerate(items)), batcher.run()])
        return results

    def _batched(self, body: list[Any], items: int) -> bool:
        """Whether the items' calls run in batches: a body of one api_call step that runs in the worker (a
        local activity, as calls.py's runs_in_worker says for the step's longest attempt), over at most
        MAX_BATCHED_ITEMS items."""
        if items > MAX_BATCHED_ITEMS or len(body) != 1 or not isinstance(body[0], lang.ToolCallStep):
            return False
        interpreter, step = self.interpreter, body[0]
        if not isinstance(interpreter.tools.get(step.tool_name), ApiCallTool):
            return False
        defaults = interpreter.task.defaults
        longest = call_options(step, defaults)[0].total_seconds()
        if not runs_in_worker(step, defaults, longest, interpreter.params.queues.get(CALL_API)):
            return False
        return interpreter.patched(CALLS_IN_WORKER_PATCH) and interpreter.patched(BATCH_PATCH)

    async def _branch(self, run: Awaitable[Any]) -> Any:
        """Run one item or branch; if it ends while another is parked, write what it added now."""
        output = await run
        log = self.interpreter.log
        if log.pending and log.parked and self.interpreter.patched(WRITE_ENDED_BRANCHES_PATCH):
            log.submit()
        return output

    def _items(self, raw: Any, names: Names, where: str) -> list[Any]:
        items = self.interpreter.values.expression(raw, names) if isinstance(raw, str) else raw
        if not isinstance(items, list):
            raise StepFailed(f"{where}: expected a list to iterate over, got {type(items).__name__}")
        max_fan_out = self.interpreter.params.max_fan_out
        if len(items) > max_fan_out:
            raise StepFailed(
                f"{where}: {len(items)} items is over the fan-out limit of {max_fan_out} items "
                "(MINT_MAX_FAN_OUT); split the list across steps or executions"
            )
        return items

    def _chunk_size(self, items: list[Any], body: list[Any], where: str) -> int | None:
        """How many items each child workflow runs, or None when this history can hold the fan-out.

        Each call, wait or timer in the body adds history events (one history holds about 51,200), so a
        large fan-out of calls is split across child workflows; a body of pure steps adds none."""
        steps = [placed.step for placed in lang.walk_steps(body, "")]
        calls = sum(s.ADDS_HISTORY for s in steps)
        if not calls:
            return None
        size = max(1, min(CHUNK_ITEMS, MAX_FAN_OUT_EVENTS // (EVENTS_PER_CALL * calls)))
        if len(items) <= size:
            return None
        waits = [s for s in steps if isinstance(s, lang.WaitForInputStep) or self._is_function_call(s)]
        if waits or len(items) > size * MAX_CHUNKS:
            fits = size if waits else size * MAX_CHUNKS
            reason = "items that wait for input run in this execution's own history" if waits else ""
            raise StepFailed(
                f"{where}: {len(items)} items with {calls} call(s) each are too many for one fan-out "
                f"(about {fits} fit{'; ' + reason if reason else ''}); split the list across steps or executions"
            )
        return size

    def _is_function_call(self, step: Any) -> bool:
        """A call of a `function` tool, which the client answers through a wait."""
        if not isinstance(step, lang.ToolCallStep):
            return False
        tool = self.interpreter.tools.get(step.tool_name)
        return tool is not None and runs_on_client(tool)

    async def _in_children(
        self, body: list[Any], items: list[Any], frame: Frame, path: str, size: int, parallelism: int
    ) -> list[Any]:
        """Run a large fan-out in child workflows of `size` items each, in order of item.

        Up to `parallelism` lanes take the next chunk as soon as their last one ends, and the lanes share
        the step's parallelism, so at most `parallelism` items are in flight across all children. Each
        child returns its results and the transitions it collected, which this log adopts in order of
        completion; the `state` keys and labels a child set are merged back here."""
        interpreter, log = self.interpreter, self.interpreter.log
        chunks = deque(range(0, len(items), size))
        lanes = min(len(chunks), parallelism)
        widths = [parallelism // lanes + (1 if i < parallelism % lanes else 0) for i in range(lanes)]
        body_spec = [lang.dump_step(step) for step in body]
        results: list[Any] = [None] * len(items)
        log.submit()  # what is pending is written while the children run

        async def lane(width: int) -> None:
            while chunks:
                first = chunks.popleft()
                chunk = MapChunk(
                    params=interpreter.params,
                    body=body_spec,
                    path=path,
                    frame=frame.snapshot(),
                    state=interpreter.state,
                    labels=interpreter.labels,
                    items=items[first : first + size],
                    first=first,
                    parallelism=width,
                    legacy=interpreter.legacy,
                )
                last = first + len(chunk.items) - 1
                outcome = await workflow.execute_child_workflow(
                    MAP_CHUNK_WORKFLOW,
                    chunk,
                    id=f"{interpreter.params.execution_id}.chunk.{workflow.uuid4()}",
                    result_type=ChunkOutcome,
                    static_summary=f"{path}: items {first}-{last} of {len(items)}",
                    task_timeout=WORKFLOW_TASK_TIMEOUT,  # a lost worker costs seconds (contracts/liveness.py)
                )
                log.adopt(outcome.transitions)
                interpreter.state.update(outcome.state)
                interpreter.labels.update(outcome.labels)
                results[first : first + len(outcome.results)] = outcome.results
                if outcome.returned:
                    raise Returned(outcome.return_value)
                if log.full:
                    await log.flush()

        with interpreter.view.doing(f"{path}: {len(items)} items, in child workflows of {size}"):
            await gather([lane(width) for width in widths])
        return results

    async def run_chunk(self, chunk: MapChunk) -> ChunkOutcome:
        """Run part of a fan-out (in a MapChunkWorkflow); the parent adopts what it returns."""
        interpreter = self.interpreter
        interpreter.legacy = chunk.legacy
        interpreter.state, interpreter.labels = dict(chunk.state), dict(chunk.labels)
        before_state, before_labels = dict(interpreter.state), dict(interpreter.labels)
        frame = Frame(chunk.frame["name"], chunk.frame["scope_id"], chunk.frame["inputs"])
        interpreter.log.start_run(workflow.info().run_id, frame.scope_id, chunk.path)
        body = lang.parse_steps(chunk.body)
        try:
            results = await self.window(body, chunk.items, chunk.first, frame, chunk.path, chunk.parallelism)
            outcome = ChunkOutcome(results=results, transitions=[])
        except Returned as returned:
            outcome = ChunkOutcome(results=[], transitions=[], returned=True, return_value=returned.value)
        except Exception as exc:
            raise StepFailed(failure_message(exc)) from None
        # Only what this child changed goes back, so children running side by side do not undo each other.
        outcome.state = {k: v for k, v in interpreter.state.items() if before_state.get(k) is not v}
        outcome.labels = {k: v for k, v in interpreter.labels.items() if before_labels.get(k) is not v}
        outcome.transitions = interpreter.log.take()
        return outcome


async def gather(coroutines: list[Any]) -> list[Any]:
    """Run concurrently and keep order; on the first failure cancel the rest (a failed branch fails all)."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        raise
