"""A run of steps in the workflow's own worker (`durability: run`; the workflow's side, and what a run holds,
is workflows/step_runs.py).

The steps are evaluated one after another with the interpreter's own parts (the task language, the value
evaluator, pure steps, the api_call's request and options), so a step computes here what it would in the
workflow. Each call is attempted as its step's retry policy says (as a batch's calls are,
activities/call_batches.py), and its answer is recorded under its call id together with the transitions of
the steps up to it, in one statement (activities/run_records.py), before the next step runs. The run's seed makes every call id, key,
transition id and random value, so a run made again evaluates to the same values and finds the answers
recorded before. A step that cannot run here (its expression fails, its value cannot be recorded, its call
belongs outside the worker) ends the run before it, unrecorded: the workflow runs it itself.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from activities.call_batches import MAX_BATCH_ANSWER_BYTES, attempt_call
from contracts.calls import BatchedCall, CallAnswer, CallFailure, RecordedAnswer
from contracts.json import JsonObject, JsonValue
from contracts.step_runs import RanStep, StepRun, StepRunOutcome
from contracts.temporal import CALL_API
from contracts.transitions import Position, TransitionRow
from infra.temporal.payload_json import from_json
from workflows import language as lang
from workflows.activation import new_uuid4
from workflows.calls import CallResult, call_options, runs_in_worker, tool_activity
from workflows.dialect import dialect_of
from workflows.frames import Frame, names_of
from workflows.language.task import parse_task
from workflows.prompts import step_arguments, task_metadata
from workflows.pure_steps import run_pure_step
from workflows.tool_kinds import ApiCallTool, parse_tools
from workflows.transition_log import Logged, UnrecordableValue, encode_output, new_row
from workflows.values import Names, ValueEvaluator
from workflows.worker_calls import retry_data

Call = Callable[[Any], Awaitable[CallAnswer]]
Record = Callable[[list[TransitionRow], list[RecordedAnswer]], Awaitable[None]]
LookUp = Callable[[list[str]], Awaitable[dict[str, JsonValue]]]


class CannotRunHere(Exception):
    """A step the run leaves to the workflow (which runs it, and fails as it would have, if it fails)."""


@dataclass
class Ended:
    """How a call step of the run ended: its output and its transition's metadata, or its failure."""

    output: Any = None
    metadata: JsonObject | None = None
    answer: RecordedAnswer | None = None  # to record, for a call made now
    failure: CallFailure | None = None
    timeout: float = 0.0  # the call's attempt timeout, seconds


class StepRunner:
    """Runs one StepRun: `call` makes an api_call, `look_up` writes what the run carries and returns the
    answers recorded for its call ids, `record` writes transitions and answers together."""

    def __init__(self, run: StepRun, call: Call, look_up: LookUp, record: Record):
        self.run, self.call, self.look_up, self.record = run, call, look_up, record
        params = run.params
        task = parse_task(params.task)
        self.defaults = task.defaults
        self.steps = task.workflows[run.frame["name"]][run.first : run.first + run.count]
        self.tools = parse_tools(params.tools)
        seed = random.Random(run.seed)
        calls = sum(isinstance(step, lang.ToolCallStep) for step in self.steps)
        self.call_ids = [new_uuid4(seed.getrandbits(128)) for _ in range(calls)]
        self.ids = random.Random(seed.getrandbits(64))  # transitions' ids and the calls' keys
        now = datetime.fromisoformat(run.now)
        started_with = frozenset(params.patches)
        self.values = ValueEvaluator(
            dialect_of(params.dialect),
            random.Random(seed.getrandbits(64)),
            lambda: now,
            params.null_text,
            lambda patch: patch in started_with,
        )
        self.frame = Frame(run.frame["name"], run.frame["scope_id"], list(run.frame["inputs"]), root=True)
        self.state, self.labels = dict(run.state), dict(run.labels)
        self.metadata = task_metadata(params)
        self.recorded: dict[str, JsonValue] = {}
        self.unrecorded: list[TransitionRow] = []
        self.calls = 0
        self.last = len(task.workflows[run.frame["name"]]) - 1  # the workflow's last step: no `next`

    async def go(self) -> StepRunOutcome:
        """Run the steps until the last, or one that cannot run here, or a call that fails."""
        self.recorded = await self.look_up(self.call_ids)
        ran: list[RanStep] = []
        size = 0
        for offset, step in enumerate(self.steps):
            position = Position(self.frame.name, self.run.first + offset, self.frame.scope_id)
            try:
                ended, encoded = await self._step(step, position)
            except CannotRunHere:
                await self._record([])
                return StepRunOutcome(ran, self.state, handed_back=True)
            except UnrecordableValue as exc:  # a call's output: the call was made, so it fails here
                await self._record([])
                return StepRunOutcome(ran, self.state, unrecordable=str(exc))
            if ended.failure is not None:
                await self._record([])
                return StepRunOutcome(ran, self.state, ended.failure, ended.timeout)
            self._add(step, position, ended, encoded)
            ran.append(RanStep(ended.output, ended.metadata))
            if ended.answer is not None:
                await self._record([ended.answer])
            size += len(encoded)
            # The outcome carries every output: past this much, the rest go on in a run of their own.
            if size >= MAX_BATCH_ANSWER_BYTES:
                break
        await self._record([])
        return StepRunOutcome(ran, self.state)

    async def _step(self, step: Any, position: Position) -> tuple[Ended, str]:
        """Run one step: how it ended, and its output as JSON text (CannotRunHere: the workflow runs it)."""
        value, state = self.frame.inputs[-1], dict(self.state)
        names = names_of(value, self.frame, self.labels, self.state, self.run.params, self.metadata)
        self.values.budget.start_step()
        try:
            if isinstance(step, lang.ToolCallStep):
                ended = await self._call(step, names, position)
            else:
                output = run_pure_step(step, value, names, self.values, self.state, legacy=False)
                ended = (
                    Ended(output.output, output.metadata()) if isinstance(output, Logged) else Ended(output)
                )
        except CannotRunHere:
            self.state = state
            raise
        except Exception:  # an expression's failure, say: the workflow runs the step, and fails the same way
            self.state = state
            raise CannotRunHere from None
        if ended.failure is not None:
            return ended, ""
        try:
            encoded, _ = encode_output("step", ended.output, position, ended.metadata)
        except UnrecordableValue:
            self.state = state
            if ended.answer is None:
                raise CannotRunHere from None
            raise  # a call was made: the step fails here, as it would alone, rather than call again
        return ended, encoded

    async def _call(self, step: lang.ToolCallStep, names: Names, position: Position) -> Ended:
        """Make a call step's call, or take its recorded answer."""
        call_id = self.call_ids[self.calls]
        self.calls += 1
        tool = self.tools.get(step.tool_name)
        if not isinstance(tool, ApiCallTool):
            raise CannotRunHere
        arguments = step_arguments(step, tool, names, self.values, self.run.params)
        owner, limit = self.run.owner, self.run.params.max_tool_timeout
        planned = tool_activity(tool, arguments, owner, self.values, self._new_id, limit)
        timeout, retry = call_options(step, self.defaults, planned.deadline)
        seconds = timeout.total_seconds()
        longest = seconds if planned.deadline is None else min(planned.deadline, seconds)
        if planned.name != CALL_API or not runs_in_worker(step, self.defaults, longest):
            raise CannotRunHere
        recorded = self.recorded.get(call_id)
        if recorded is not None:
            answer = from_json(CallAnswer, recorded)
        else:
            batched = BatchedCall(call_id, planned.request, seconds)
            developer = self.run.owner.developer_id
            outcome = await attempt_call(CALL_API, developer, retry_data(retry), batched, self.call)
            if outcome.answer is None:
                return Ended(failure=outcome.failure, timeout=seconds)
            answer = outcome.answer
        made = RecordedAnswer(call_id, answer) if recorded is None else None
        return Ended(answer.response, CallResult(answer.response, answer.attempt).metadata(), made)

    def _add(self, step: Any, position: Position, ended: Ended, encoded: str) -> None:
        """A step ran: its output joins the frame, and its transition waits to be recorded."""
        if step.label:
            self.labels[step.label] = {"input": self.frame.inputs[-1], "output": ended.output}
        self.frame.inputs.append(ended.output)
        index = position.step
        next_ = Position(position.workflow, index + 1, position.scope_id) if index < self.last else None
        seq = self.run.seq + len(self.frame.inputs) - len(self.run.frame["inputs"])
        when = datetime.now(UTC).isoformat()
        row = new_row("step", encoded, position, next_, step.label, ended.metadata, seq, self._new_id(), when)
        self.unrecorded.append(row)

    def _new_id(self) -> str:
        """A transition's id or a call's key: the same in every run of the run."""
        return new_uuid4(self.ids.getrandbits(128))

    async def _record(self, answers: list[RecordedAnswer]) -> None:
        if self.unrecorded or answers:
            rows, self.unrecorded = self.unrecorded, []
            await self.record(rows, answers)
