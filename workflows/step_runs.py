"""`durability: run`: consecutive pure and api_call steps of a workflow run together in one activity.

By default (`durability: step`) each call step is a local activity and a workflow task around it: a few ms
a step that Temporal's SDK sets, whatever the call costs. A step that says `durability: run` (or whose
task's `defaults` say it) may instead join its neighbours in a run: the workflow's own worker evaluates the
steps one after another as the interpreter would (activities/step_runs.py) and records each call's answer,
with the transitions of the steps before it, in Postgres as soon as the call answers. A crash resumes the
run from its first step: the pure steps are evaluated again to the same values (same clock, same random
seed), a call whose answer is recorded is not made again, and the call in flight is made again with the
same Idempotency-Key. The workflow sees only the run's end.

A run holds the steps of the root frame (main, or what a tail yield put in its place) from a step to the
last of two or more api_call steps that run in the worker, with only such calls and evaluate, set, get and
log steps between them. Where a step cannot run in the run after all (a call whose own timeout keeps it out
of the worker, an expression that fails), the run stops before it and the interpreter runs it, as it would
have: a failing step fails the same way. A call that fails its last attempt fails its step as the call
alone would have.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio import workflow

from contracts.calls import Owner
from contracts.step_runs import StepRun, StepRunOutcome
from contracts.temporal import CALL_API
from contracts.transitions import Position
from workflows import failures
from workflows import language as lang
from workflows.call_batches import failure_error
from workflows.calls import CALLS_IN_WORKER_PATCH, call_options
from workflows.frames import Frame
from workflows.tool_kinds import ApiCallTool
from workflows.transition_log import UnrecordableValue
from workflows.visibility import where
from workflows.worker_calls import BATCH_ATTEMPTS_UNBOUNDED, WorkerCalls, retry_data

if TYPE_CHECKING:
    from workflows.step_runner import StepRunner

RUNS_PATCH = "durability-run"
PURE_STEPS = (lang.EvaluateStep, lang.SetStep, lang.GetStep, lang.LogStep)
# A run is worth its activity from two calls on (one call alone is one local activity anyway).
MIN_RUN_CALLS = 2
# How long a run may take beyond its calls' every attempt and the waits between them.
RUN_SLACK_SECONDS = 10.0


class StepRuns:
    """Finds and runs the runs of one interpreter's root frame."""

    def __init__(self, interpreter: StepRunner, calls: WorkerCalls):
        self.interpreter = interpreter
        self.calls = calls
        # Where the last run stopped early, if it did: the interpreter runs that step itself.
        self._stopped: tuple[str, int] | None = None
        self._spans: dict[tuple[str, int], int] = {}  # (workflow, step) -> _longest_run's answer

    @functools.cached_property
    def wanted(self) -> bool:
        """Whether any step of the task may ask for a run (a step says so, or the task's defaults do)."""
        task = self.interpreter.task
        if task.defaults is not None and task.defaults.durability == "run":
            return True
        return any(step.durability == "run" for steps in task.workflows.values() for step in steps)

    async def run_from(self, steps: list[Any], index: int, frame: Frame) -> int:
        """Run the run that starts at step `index` of `frame`, if one does: how many steps it ran (0: none
        starts there, and the interpreter runs the step)."""
        count = self._span(steps, index, frame)
        if count == 0:
            return 0
        return await self._run(steps, index, count, frame)

    def _span(self, steps: list[Any], index: int, frame: Frame) -> int:
        """How many steps from `index` run together (0: the step runs on its own)."""
        runner = self.interpreter
        if not frame.root or runner.legacy or runner.log.collect or self._stopped == (frame.scope_id, index):
            return 0
        key = (frame.name, index)
        if key not in self._spans:  # each step of a long chain would otherwise scan the rest of it again
            self._spans[key] = self._longest_run(steps, index)
        end = self._spans[key]
        return end if end and runner.patched(RUNS_PATCH) else 0

    def _longest_run(self, steps: list[Any], index: int) -> int:
        """The steps from `index` that may run together, up to the last of their calls (0: fewer than
        MIN_RUN_CALLS calls)."""
        count = calls = end = 0
        for step in steps[index:]:
            if not self._joins(step):
                break
            count += 1
            if isinstance(step, lang.ToolCallStep):
                calls, end = calls + 1, count
        return end if calls >= MIN_RUN_CALLS else 0

    def _joins(self, step: Any) -> bool:
        """Whether `step` may run in a run: it asks for one, and is pure or an api_call the worker makes."""
        defaults = self.interpreter.task.defaults
        durability = step.durability or (defaults.durability if defaults else None)
        if durability != "run":
            return False
        if isinstance(step, PURE_STEPS):
            return True
        if not isinstance(step, lang.ToolCallStep):
            return False
        local = step.local if step.local is not None else (defaults.local if defaults else None)
        return (
            isinstance(self.interpreter.tools.get(step.tool_name), ApiCallTool)
            and local is not False
            and CALL_API not in self.interpreter.params.queues
            and self.interpreter.patched(CALLS_IN_WORKER_PATCH)
        )

    async def _run(self, steps: list[Any], index: int, count: int, frame: Frame) -> int:
        """Run steps `index` to `index + count - 1` of `frame` in one activity; the steps it ran (it may stop
        early) join the frame as the interpreter's would. Raises the failure of a call that failed its last
        attempt."""
        runner = self.interpreter
        await runner.log.settle()  # the run's transitions are numbered after every one written before
        run = StepRun(
            params=replace(runner.params, resume=None),
            first=index,
            count=count,
            frame=frame.snapshot(),
            state=runner.state,
            labels=runner.labels,
            owner=Owner(runner.params.developer_id, runner.agent.id, runner.params.execution_id),
            seed=workflow.random().getrandbits(64),
            now=workflow.now().isoformat(),
            seq=runner.log.seq,
        )
        first = where(Position(frame.name, index, frame.scope_id))
        summary = f"{first} · a run of {count} steps"
        try:
            with runner.view.doing(summary):
                bound = self._time_bound(steps[index : index + count])
                outcome = await self.calls.run_steps(run, bound, summary)
        except BaseException as exc:
            # The run may have written any of its transitions: the execution's last ones (its error or
            # cancel) are numbered after them all.
            runner.log.ran(count)
            if failures.was_cancelled(exc):
                raise asyncio.CancelledError from None
            raise
        self._adopt(outcome, steps, index, frame)
        self._stopped = (frame.scope_id, index + len(outcome.ran)) if outcome.handed_back else None
        if outcome.unrecordable is not None:
            raise UnrecordableValue(outcome.unrecordable)
        if outcome.failure is not None:
            failed = steps[index + len(outcome.ran)]
            self._raise(outcome, failed, Position(frame.name, index + len(outcome.ran), frame.scope_id))
        return len(outcome.ran)

    def _adopt(self, outcome: StepRunOutcome, steps: list[Any], index: int, frame: Frame) -> None:
        """Take in what the run did: its steps' outputs, labels and state, and its transitions' numbers."""
        runner = self.interpreter
        for offset, ran in enumerate(outcome.ran):
            label = steps[index + offset].label
            if label:
                runner.labels[label] = {"input": frame.inputs[-1], "output": ran.output}
            frame.inputs.append(ran.output)
        runner.state.clear()
        runner.state.update(outcome.state)
        runner.log.ran(len(outcome.ran))

    def _raise(self, outcome: StepRunOutcome, step: lang.ToolCallStep, position: Position) -> None:
        """The failed call's error, as the step alone would have raised it."""
        assert outcome.failure is not None
        runner = self.interpreter
        tool = runner.tools[step.tool_name]
        what = f"{where(position, step.label)} · tool {tool.name} ({tool.type})"
        _, retry = call_options(step, runner.task.defaults)
        error = failure_error(CALL_API, outcome.failure)
        error = failures.timed_out(error, what, outcome.failed_after or 0.0, retry)
        raise error from error.cause

    def _time_bound(self, steps: list[Any]) -> timedelta:
        """A bound on a run: each call's every attempt at its longest and the waits between them (past the
        bound, the run is made again, skipping the calls that answered)."""
        runner = self.interpreter
        defaults, seconds = runner.task.defaults, RUN_SLACK_SECONDS
        for step in steps:
            if isinstance(step, lang.ToolCallStep):
                timeout, retry = call_options(step, defaults, runner.params.max_tool_timeout)
                retries = retry_data(retry)
                attempts = retries.maximum_attempts or BATCH_ATTEMPTS_UNBOUNDED
                seconds += attempts * (timeout.total_seconds() + retries.maximum_interval)
        return timedelta(seconds=seconds)
