"""The task interpreter: runs a task's steps inside a Temporal workflow.

Here are the run loop, frames, continue-as-new, the dispatch over step kinds (`_execute`) and the steps that
need only the interpreter's own state: pure steps (evaluate, if_else, switch, set, get, log, return, error)
run right here, deterministically; `sleep` and `wait_for_input` block in waits.Waits, and `yield` runs another
named workflow of the task in-process (no child workflow per step). Collaborators that share the interpreter's
state and log run the rest: fan_out.FanOut the fan-outs (foreach, map_reduce, parallel), call_steps.CallSteps
the calls (tool calls, prompts, search), step_runs.StepRuns the runs of steps in one activity (`durability:
run`). Every state change is appended to a TransitionLog, flushed in one local activity before the workflow
blocks or ends.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any, assert_never, final

from temporalio import workflow

from contracts.executions import ExecutionParams, ResumePoint, StepRecord
from contracts.json import JsonObject
from contracts.temporal import WRITE_TRANSITIONS
from contracts.transitions import Position
from workflows import language as lang
from workflows.activation import Activation
from workflows.agents import Agent
from workflows.call_steps import CallSteps
from workflows.calls import CallResult
from workflows.dialect import dialect_of
from workflows.execution_guardrails import ExecutionGuardrails
from workflows.failures import Returned, StepFailed, TypedFailure, failure_message, failure_type
from workflows.fan_out import CHUNK_ITEMS, FanOut
from workflows.frames import Frame, names_of
from workflows.inbox import Inbox
from workflows.language.task import parse_task
from workflows.patches import Patches
from workflows.prompts import task_metadata
from workflows.pure_steps import run_pure_step
from workflows.step_runs import StepRuns
from workflows.storable import storable_text
from workflows.tool_kinds import parse_tools
from workflows.transition_log import Logged, TransitionLog
from workflows.values import Names, ValueEvaluator
from workflows.visibility import Visibility
from workflows.waits import Waits
from workflows.webhooks import Webhooks

MAX_YIELD_DEPTH = 200
# Julep's loops: a log step passes its input through, a yield ending an if/switch branch is a tail call, a nested
# yield runs on a fresh Python stack, an appending reduce extends its list. A run that started before keeps the
# behaviour it started with (Interpreter._started_legacy): its replay issues the commands its history holds.
JULEP_LOOPS_PATCH = "issue-13-log-passes-input-tail-branch-yields"


@final
@dataclass
class TailCall:
    """A yield in tail position, handed up to the run of its workflow, which becomes the callee's run."""

    step: lang.YieldStep
    value: Any  # the yield's `_`


class Interpreter:
    """Runs one execution's task; `inbox` receives the resume inputs the workflow's signal delivers."""

    def __init__(self, params: ExecutionParams, inbox: Inbox, chunk: bool = False):
        self.params = params
        self.task = parse_task(params.task)
        dialect = dialect_of(params.dialect)
        self.patched = Patches(params.patches)
        self.activation = Activation()  # what Temporal says of the activation running now
        self.values = ValueEvaluator(dialect, workflow.random(), workflow.now, params.null_text, self.patched)
        self.view = Visibility(params.execution_id, self.patched)  # what the Temporal UI shows of the run
        self.log = TransitionLog(params.execution_id, params.developer_id, chunk, self.view.status_changed)
        self.log.activation = self.activation  # one reading of each activation, for the log and the steps
        self.log.write_queue = params.queues.get(WRITE_TRANSITIONS)  # background writes' own queue, if any
        self.chunk = chunk  # running part of a fan-out in a child workflow (see FanOut.run_chunk)
        self.agent = Agent.of(params.agent)
        self.tools = parse_tools(params.tools)
        self.state: JsonObject = {}
        self.metadata = task_metadata(params)  # what `metadata` reads: execution > task > agent
        self.labels: dict[str, StepRecord] = {}
        self.depth = 0  # nested (non-tail) yields, counted here in legacy runs only (Frame.depth otherwise)
        self.legacy = True if chunk else self._started_legacy()  # a chunk's is its parent's (run_chunk)
        self.fan_out = FanOut(self)  # foreach, map_reduce, parallel
        self.webhooks = Webhooks(params)  # reports to the execution's callback_url, if it has one
        self.waits = Waits(
            self.log, inbox, self.values, CHUNK_ITEMS if chunk else None, self.view, self.patched
        )
        self.waits.webhooks = self.webhooks
        self.call_steps = CallSteps(self)  # tool calls, prompts, search
        self.step_runs = StepRuns(self, self.call_steps.in_worker)  # durability: run
        self.guards = ExecutionGuardrails(self, self.call_steps, self._names)  # the task's and agent's
        self.root: Frame  # main's frame, or what replaced it through tail yields (set by _start)

    def _started_legacy(self) -> bool:
        """Whether this execution started before log, yield and reduce took their present form.

        Decided once, when the execution starts: a workflow that records the patch marker takes the new
        behaviour, and a history without it (replayed by an upgraded worker) the old. The answer goes on
        through continue-as-new, so a long-running execution never changes behaviour midway."""
        if self.params.resume is not None:
            return self.params.resume.legacy
        return not self.patched(JULEP_LOOPS_PATCH)

    async def run(self) -> Any:
        """Run `main` (or pick up where the previous run left off) and write the final transition."""
        frame, index = self._start()
        try:
            await self.guards.run_input(frame, index)
            output, frame = await self._run_frame(frame, index)
            await self.guards.run("output", output, frame)
            self.log.add("finish", output, frame.last_position())
            await self.log.flush(status="succeeded", output=output)
            await self.webhooks.ended(self.log.seq, "succeeded", {"output": output})
            return output
        except asyncio.CancelledError:
            self.log.add("cancelled", None, self.root.position())
            await self.log.flush(status="cancelled")
            await self.webhooks.ended(self.log.seq, "cancelled", {"error": "cancelled"})
            raise
        except Exception as exc:  # every failure ends the execution visibly; none leaves it stuck
            # A message may quote the very text that failed (an `error` step's); it must be storable too.
            message = storable_text(failure_message(exc))
            details = exc.details() if isinstance(exc, TypedFailure) else None
            await self.log.fail(message, self.root.position(), failure_type(message), details)
            await self.webhooks.ended(self.log.seq, "failed", {"error": message})
            raise StepFailed(message) from None

    def _start(self) -> tuple[Frame, int]:
        resume = self.params.resume
        if resume is None:
            self.root = self._new_frame("main", self.params.input, root=True)
            self.log.add("init", self.params.input, self.root.position())
            return self.root, 0
        self.log.seq, self.state, self.labels = resume.seq, resume.state, resume.labels
        self.root = Frame.restore(resume.frame)
        return self.root, resume.index

    # Sequences and frames -------------------------------------------------------------------------------

    def _new_frame(self, name: str, workflow_input: Any, root: bool = False, depth: int = 0) -> Frame:
        return Frame(
            name=name, scope_id=str(workflow.uuid4()), inputs=[workflow_input], root=root, depth=depth
        )

    async def _run_frame(self, frame: Frame, index: int = 0) -> tuple[Any, Frame]:
        """Run a named workflow's top-level steps from `index`; `return` ends it early.

        Returns the output and the frame that produced it: a `yield` in tail position (the last step, or the
        last step of an if/switch branch that is the last step) replaces the frame instead of nesting a new
        one, so a workflow that restarts itself forever (the seed's Daily Motivation) or loops through a
        branch (`if: $ _.i < n`, `then: {workflow: main, ...}`) runs in constant space."""
        try:
            while True:
                steps = self.task.workflows[frame.name]
                while index < len(steps):
                    step, last = steps[index], index == len(steps) - 1
                    if last and isinstance(step, lang.YieldStep):
                        frame, index = self._tail_call(TailCall(step, frame.inputs[index]), frame), 0
                        break
                    await self._checkpoint(frame, index)
                    if self.step_runs.wanted and (ran := await self.step_runs.run_from(steps, index, frame)):
                        index += ran
                        continue
                    position = Position(frame.name, index, frame.scope_id)
                    value = frame.inputs[index]
                    tail = last and not self.legacy
                    output = await self._run_step(step, value, frame, position, not last, tail=tail)
                    if output.__class__ is TailCall:
                        frame, index = self._tail_call(output, frame), 0
                        break
                    frame.inputs.append(output)  # step index's output, and the next step's input
                    index += 1
                else:
                    return frame.inputs[-1], frame
        except Returned as returned:
            frame.inputs.append(returned.value)  # the step that returned ran last (Frame.last_position)
            return returned.value, frame

    def _tail_call(self, call: TailCall, frame: Frame) -> Frame:
        """The frame that replaces `frame`: the yield's workflow, at the same depth."""
        step, value = call.step, call.value
        arguments = (
            value
            if step.arguments in (None, "_")
            else self.values.value(step.arguments, self._names(value, frame))
        )
        callee = self._new_frame(step.workflow, arguments, root=frame.root, depth=frame.depth)
        caller = self.log.caller(frame.scope_id)  # for traces: the run it replaces ends here
        where = Position(step.workflow, 0, callee.scope_id)
        self.log.add("init_branch", arguments, where, label=step.label, metadata=caller)
        if callee.root:
            self.root = callee
        return callee

    async def _checkpoint(self, frame: Frame, index: int) -> None:
        """Continue-as-new between top-level steps of the root frame once the history grows long.

        Only there is nothing else in flight, so the whole interpreter state fits in a ResumePoint."""
        if not frame.root:
            return
        now = self.activation.read()
        if not (now.continue_as_new_suggested or now.history_length > self.params.max_history_events):
            return
        await self.log.flush()
        resume = ResumePoint(
            frame=frame.snapshot(),
            index=index,
            seq=self.log.seq,
            state=self.state,
            labels=self.labels,
            legacy=self.legacy,
        )
        workflow.continue_as_new(replace(self.params, resume=resume))

    async def run_sequence(
        self,
        steps: list[Any],
        value: Any,
        frame: Frame,
        path: str,
        metadata: JsonObject | None = None,
        tail: bool = False,
    ) -> Any:
        """Run nested steps (then/else/do/map/branches): each step's output is the next one's `_`.

        With `tail` (a branch whose output is its workflow's), a yield as the last step is not run here but
        handed up as a TailCall, as is one from a branch of a last if/switch."""
        for index, step in enumerate(steps):
            last = index + 1 == len(steps)
            if tail and last and isinstance(step, lang.YieldStep):
                return TailCall(step, value)
            position = Position(path, index, frame.scope_id)
            value = await self._run_step(step, value, frame, position, not last, metadata, tail and last)
        return value

    async def _run_step(
        self,
        step: Any,
        value: Any,
        frame: Frame,
        position: Position,
        has_next: bool,
        metadata: JsonObject | None = None,
        tail: bool = False,
    ) -> Any:
        names = self._names(value, frame)
        self.start_budget()
        try:
            output = await self._execute(step, value, names, frame, position, metadata, tail)
            # By exact class: isinstance is slow in the workflow sandbox, and this runs for every step.
            kind = output.__class__
            if kind is TailCall:  # the workflow's run goes on as the callee's: nothing to record
                return output
            if kind is CallResult or kind is Logged:  # attempts, usage or log text go on the transition
                output, metadata = output.output, {**(metadata or {}), **output.metadata()}
        except Returned as returned:
            self.log.add("step", returned.value, position, None, getattr(step, "label", None), metadata)
            raise
        label = getattr(step, "label", None)
        if label:
            self.labels[label] = {"input": value, "output": output}
        next_ = Position(position.workflow, position.step + 1, position.scope_id) if has_next else None
        self.log.add("step", output, position, next_, label, metadata)
        if self.log.full or self.values.budget.should_yield:
            # Also the point where a long run of pure steps hands control back to Temporal in time
            # (a child workflow, which writes nothing, does that with a short timer instead).
            if self.chunk and self.values.budget.should_yield:
                await workflow.sleep(0.001)
            await self.log.flush()
            self.values.budget.yielded()
        return output

    def start_budget(self) -> None:
        """A fresh allowance of work for a step."""
        # The CPU guard (STEP_CPU_SECONDS in expressions/budget.py), the one limit that is not deterministic,
        # is enforced only on the first run of each workflow task, never while Temporal replays history:
        # - a step the guard stopped failed the execution (a failed expression is never caught and
        #   retried), so its history is closed; replaying it (a query, a replay test) skips the guard, at
        #   worst rerunning the slow step, and cannot wedge anything;
        # - a step that passed the first time must pass again on replay, however slow the replaying worker:
        #   a guard tripping there would issue different commands, a nondeterminism error, and Temporal
        #   would retry that workflow task forever.
        self.values.budget.start_step(cpu_guard=not self.activation.current().replaying)

    def _names(self, value: Any, frame: Frame) -> Names:
        return names_of(value, frame, self.labels, self.state, self.params, self.metadata)

    # Steps -----------------------------------------------------------------------------------------------

    async def _execute(
        self,
        step: lang.Step,
        value: Any,
        names: Names,
        frame: Frame,
        position: Position,
        metadata: JsonObject | None = None,
        tail: bool = False,
    ) -> Any:
        """One case per step kind (the pure ones together); assert_never keeps it exhaustive. No frame of its
        own between a step and the steps it runs: a legacy run's recursion depth is in recorded histories."""
        here = f"{position.workflow}[{position.step}]"
        match step:
            case (
                lang.EvaluateStep()
                | lang.SetStep()
                | lang.GetStep()
                | lang.LogStep()
                | lang.ReturnStep()
                | lang.ErrorStep()
            ):
                return run_pure_step(step, value, names, self.values, self.state, self.legacy)
            case lang.IfElseStep():
                return await self._if_else(step, value, names, frame, here, tail)
            case lang.SwitchStep():
                return await self._switch(step, value, names, frame, here, tail)
            case lang.ForeachStep():
                return await self.fan_out.foreach(step, value, names, frame, here)
            case lang.MapReduceStep():
                return await self.fan_out.map_reduce(step, names, frame, here)
            case lang.ParallelStep():
                return await self.fan_out.parallel(step, value, frame, here)
            case lang.SleepStep():
                return await self.waits.sleep(step, value, names, position)
            case lang.WaitForInputStep():
                return await self.waits.wait_for_input(step, names, position, metadata)
            case lang.YieldStep():
                caller = self.log.caller(frame.scope_id, position, (metadata or {}).get("item"))
                return await self._yield(step, value, names, frame, caller)
            case lang.ToolCallStep():
                return await self.call_steps.tool_call(step, names, position, metadata)
            case lang.PromptStep():
                return await self.call_steps.prompt(step, names, position, metadata)
            case lang.SearchStep():
                return await self.call_steps.search(step, names, position)
            case _:
                # Task validation admits no other kind; a new kind fails the type check until handled here.
                assert_never(step)

    async def _if_else(
        self, step: lang.IfElseStep, value: Any, names: Names, frame: Frame, here: str, tail: bool
    ) -> Any:
        if self.values.expression(step.if_, names):
            return await self.run_sequence(step.then, value, frame, f"{here}.then", tail=tail)
        if step.else_:
            return await self.run_sequence(step.else_, value, frame, f"{here}.else", tail=tail)
        return value  # no `else`: the input passes through

    async def _switch(
        self, step: lang.SwitchStep, value: Any, names: Names, frame: Frame, here: str, tail: bool
    ) -> Any:
        for i, branch in enumerate(step.switch):
            if branch.case == "_" or self.values.expression(branch.case, names):
                return await self.run_sequence(branch.then, value, frame, f"{here}.switch[{i}]", tail=tail)
        return None

    async def _yield(
        self, step: lang.YieldStep, value: Any, names: Names, frame: Frame, caller: JsonObject
    ) -> Any:
        """A nested (non-tail) yield: run the workflow, then carry on with its output (`caller`: for traces,
        the run and step that called it, TransitionLog.caller)."""
        depth = self.depth if self.legacy else frame.depth
        if depth >= MAX_YIELD_DEPTH:
            raise StepFailed(
                f"workflow {step.workflow!r} would nest more than {MAX_YIELD_DEPTH} yields deep (yields that "
                "are not tail calls); make the recursive yield the last step of its workflow, or of an "
                "if/switch branch that is, and it runs in constant space"
            )
        arguments = value if step.arguments in (None, "_") else self.values.value(step.arguments, names)
        callee = self._new_frame(step.workflow, arguments, depth=frame.depth + 1)
        self.log.add("init_branch", arguments, Position(step.workflow, 0, callee.scope_id), metadata=caller)
        output, callee = await self._run_nested(callee)
        self.log.add("finish_branch", output, callee.last_position())
        return output

    async def _run_nested(self, callee: Frame) -> tuple[Any, Frame]:
        """Run a nested yield's workflow in an asyncio task of its own, on a fresh Python stack.

        Awaited directly, each level of recursion would stack a dozen Python frames on its caller's, and the
        recursion limit would end a deep recursion in whatever expression ran then (misreported as that
        expression nesting too deeply). On its own task, MAX_YIELD_DEPTH alone bounds the depth."""
        if not self.legacy:
            return await asyncio.ensure_future(self._run_frame(callee))
        self.depth += 1
        try:
            return await self._run_frame(callee)
        finally:
            self.depth -= 1
