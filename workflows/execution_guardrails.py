"""An execution's guardrails: the task's, then its agent's (both apply), on the input before the first step
(or a restart's new input, before the step it restarts) and on the final output before `finish`
(workflows/guardrails.py runs them; the interpreter calls `run`). After a handoff in a prompt step, the agent
that took over brings its own too (`run_handed`): its input guardrails on what it is handed, its output
guardrails on its answer, as in a chat.

The task's come first because they are the more specific, written for this task's input and output; an
agent's guard everything the agent does. A refusal fails the execution with GuardrailTripped, whose `error`
transition names the guardrail; a prompt guardrail's model call is a `step` transition naming it, which
carries the call's usage. Without guardrails nothing is run, issued or recorded, so the histories of tasks
without them are as before (and no history from before guardrails existed can hold any: the fields are new;
nor can a history from before handed agents' guardrails ran hold a handed agent's, which the execution's
parameters did not carry then).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio.exceptions import ActivityError, ApplicationError

from contracts.calls import ModelRequest, Owner
from contracts.messages import Message
from contracts.transitions import Position
from workflows.agents import Agent
from workflows.call_steps import CallSteps
from workflows.failures import TypedFailure
from workflows.frames import Frame
from workflows.guardrails import (
    RESPONSE_FORMAT,
    Stage,
    Verdict,
    answer_text,
    in_order,
    run_guardrails,
    user_text,
    verdict_of,
)
from workflows.language import Guardrail
from workflows.step_runner import StepRunner
from workflows.values import Names


class ExecutionGuardrails:
    """Runs one interpreter's guardrails, with its model calls and the names its expressions see."""

    def __init__(
        self,
        interpreter: StepRunner,
        call_steps: CallSteps,
        names: Callable[[Any, Frame], Names],
    ):
        self.interpreter = interpreter
        self.call_steps = call_steps
        self.names = names

    async def run_input(self, frame: Frame, index: int) -> None:
        """The input guardrails on an execution's input, before its first step, or on a restart's new input,
        before the step it restarts (`index`); a run continued as new checked its input when it started."""
        resume = self.interpreter.params.resume
        if resume is None or resume.new_input:
            await self.run("input", frame.inputs[index], frame)

    async def run(self, stage: Stage, value: Any, frame: Frame) -> None:
        """Run the guardrails of `stage` on `value`; the first that refuses raises GuardrailTripped."""
        interpreter = self.interpreter
        guardrails = in_order(interpreter.task.guardrails, interpreter.agent.guardrails, stage=stage)
        if not guardrails:
            return
        position = frame.position()

        async def ask(guardrail: Guardrail, messages: list[Message]) -> Verdict:
            return await self._verdict(guardrail, messages, stage, position)

        interpreter.start_budget()
        names = {**self.names(value, frame), "messages": None}  # `messages` is a chat's
        await run_guardrails(stage, guardrails, value, names, interpreter.values, ask)

    async def run_handed(
        self,
        stage: Stage,
        agent: Agent,
        messages: list[Message],
        names: Names,
        position: Position,
    ) -> None:
        """The guardrails of `stage` of an agent a prompt step was handed to, as a chat runs them: `_` is the
        text of the user messages it is handed (input) or of its answer (output), `messages` the messages."""
        guardrails = in_order(agent.guardrails, stage=stage)
        if not guardrails:
            return
        value = user_text(messages) if stage == "input" else answer_text(messages[-1])

        async def ask(guardrail: Guardrail, prompt: list[Message]) -> Verdict:
            return await self._verdict(guardrail, prompt, stage, position, agent)

        # `agent` is the agent whose guardrails these are, as in a chat (the step's names have the execution's)
        scope = {**names, "agent": agent.view, "messages": messages}
        await run_guardrails(stage, guardrails, value, scope, self.interpreter.values, ask)

    async def _verdict(
        self,
        guardrail: Guardrail,
        messages: list[Message],
        stage: Stage,
        position: Position,
        agent: Agent | None = None,
    ) -> Verdict:
        """A prompt guardrail's model call, under the verdict's JSON schema, recorded as a `step`; `agent` is
        the guardrail's (default: the execution's)."""
        params, name = self.interpreter.params, guardrail.name
        agent = self.interpreter.agent if agent is None else agent
        request = ModelRequest(
            model=guardrail.model or agent.model,
            messages=messages,
            settings={},
            tools=[],
            tool_choice=None,
            response_format=RESPONSE_FORMAT,
            at=f"{params.task_info.get('name', '')}:guardrails.{stage}.{name}",
            # Counted against the execution's budget like any of its model calls.
            owner=Owner(params.developer_id, agent.id, params.execution_id),
        )
        summary = f"{stage} guardrail {name} · model {request.model or 'by default'}"
        try:
            answer = await self.call_steps.model_call(request, summary)
            verdict = verdict_of(answer.output["choices"][0]["message"].get("content"))
        except ActivityError as exc:
            cause = exc.cause  # an answer that missed the schema on every attempt
            if not (isinstance(cause, ApplicationError) and cause.type == "InvalidModelOutput"):
                raise
            raise TypedFailure("ModelBehaviorError", f"{stage} guardrail {name!r}: {cause.message}") from None
        except ValueError as exc:
            raise TypedFailure("ModelBehaviorError", f"{stage} guardrail {name!r}: {exc}") from None
        output = {"guardrail": name, "allowed": verdict.allowed, "reason": verdict.reason}
        metadata = {"guardrail": name, "stage": stage, **answer.metadata()}
        self.interpreter.log.add("step", output, position, position, metadata=metadata)
        return verdict
