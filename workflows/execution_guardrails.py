"""An execution's guardrails: the task's, then its agent's (both apply), on the input before the first step
and on the final output before `finish` (workflows/guardrails.py runs them; the interpreter calls `run`).

The task's come first because they are the more specific, written for this task's input and output; an
agent's guard everything the agent does. A refusal fails the execution with GuardrailTripped, whose `error`
transition names the guardrail; a prompt guardrail's model call is a `step` transition naming it, which
carries the call's usage. Without guardrails nothing is run, issued or recorded, so the histories of tasks
without them are as before (and no history from before guardrails existed can hold any: the fields are new).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio.exceptions import ActivityError, ApplicationError

from contracts.calls import ModelRequest, Owner
from contracts.transitions import Position
from workflows.call_steps import CallSteps
from workflows.failures import TypedFailure
from workflows.frames import Frame
from workflows.guardrails import RESPONSE_FORMAT, Stage, Verdict, in_order, run_guardrails, verdict_of
from workflows.language import Guardrail
from workflows.step_runner import StepRunner


class ExecutionGuardrails:
    """Runs one interpreter's guardrails, with its model calls and the names its expressions see."""

    def __init__(
        self,
        interpreter: StepRunner,
        call_steps: CallSteps,
        names: Callable[[Any, Frame], dict[str, Any]],
    ):
        self.interpreter = interpreter
        self.call_steps = call_steps
        self.names = names

    async def run(self, stage: Stage, value: Any, frame: Frame) -> None:
        """Run the guardrails of `stage` on `value`; the first that refuses raises GuardrailTripped."""
        interpreter = self.interpreter
        guardrails = in_order(
            interpreter.task.guardrails, interpreter.params.agent.get("guardrails"), stage=stage
        )
        if not guardrails:
            return
        position = frame.position()

        async def ask(guardrail: Guardrail, messages: list[dict[str, Any]]) -> Verdict:
            return await self._verdict(guardrail, messages, stage, position)

        interpreter.start_budget()
        names = {**self.names(value, frame), "messages": None}  # `messages` is a chat's
        await run_guardrails(stage, guardrails, value, names, interpreter.values, ask)

    async def _verdict(
        self, guardrail: Guardrail, messages: list[dict[str, Any]], stage: Stage, position: Position
    ) -> Verdict:
        """A prompt guardrail's model call, under the verdict's JSON schema, recorded as a `step`."""
        params, name = self.interpreter.params, guardrail.name
        request = ModelRequest(
            model=guardrail.model or params.agent.get("model"),
            messages=messages,
            settings={},
            tools=[],
            tool_choice=None,
            response_format=RESPONSE_FORMAT,
            at=f"{params.task_info.get('name', '')}:guardrails.{stage}.{name}",
            owner=Owner(params.developer_id, params.agent.get("id")),
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
