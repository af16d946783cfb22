"""Guardrails in a chat (workflows/guardrails.py runs them): every answering agent's input guardrails on the
user's new messages, before any model is asked (and, after a handoff, the target's on what it is handed),
and each answering agent's output guardrails on its answer, which a streamed chat holds back until they pass.

Here in the API process, check expressions run in the same expression sandbox as in a workflow (a fresh
evaluator per run: outside a workflow nothing needs to replay), and a prompt guardrail asks its model through
the model client. A refusal is a 400 of type `InputGuardrailTripwire` or `OutputGuardrailTripwire`; the chat
then saves nothing (Chatter saves only once every agent has answered).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from temporalio.exceptions import ApplicationError

from contracts.calls import ModelRequest, Owner
from contracts.messages import Message
from expressions.parsing import ExpressionError
from infra.models.client import ModelClient
from services.chat.spending import ChatSpending
from services.errors import Invalid, ModelFailed, ModelRefused, Refused
from workflows.agents import Agent
from workflows.guardrails import (
    RESPONSE_FORMAT,
    GuardrailTripped,
    Stage,
    Verdict,
    answer_text,
    in_order,
    run_guardrails,
    user_text,
    verdict_of,
)
from workflows.language import Guardrail
from workflows.values import Names, ValueEvaluator

AGENT_KEYS = ("id", "name", "about", "model", "instructions", "metadata", "default_settings")


@dataclass
class TextGate:
    """Where the text of one agent's turn of a streamed chat goes: to the client as the model writes it,
    unless an agent that may answer the turn (the one asked, or one it may hand off to) has output
    guardrails. Then it is `held`: nothing of the turn is sent until the answer has passed them, and then
    only the answer, whole, so text a guardrail refuses never leaves (and the stream carries the refusal)."""

    send: Callable[[str], Awaitable[None]]
    held: bool

    async def piece(self, text: str) -> None:
        """A piece of text as the model writes it: sent on unless held."""
        if not self.held:
            await self.send(text)

    async def passed(self, message: Message) -> None:
        """The answer passed the answering agent's output guardrails: a held answer goes out now."""
        if self.held and (text := answer_text(message)):
            await self.send(text)


class ChatGuardrails:
    def __init__(self, models: ModelClient):
        self.models = models

    async def check_input(
        self, developer: str, session_id: str, agent: Agent, messages: list[Message], spending: ChatSpending
    ) -> None:
        """The agent's input guardrails on the request's messages (`_` is their user text)."""
        await self._run(
            "input", Asking(developer, session_id, agent, spending), user_text(messages), messages
        )

    async def check_output(
        self, developer: str, session_id: str, agent: Agent, message: Message, spending: ChatSpending
    ) -> None:
        """The agent's output guardrails on its answer (`_` is the answer's text)."""
        await self._run(
            "output", Asking(developer, session_id, agent, spending), answer_text(message), [message]
        )

    async def _run(self, stage: Stage, asking: Asking, value: str, messages: list[Message]) -> None:
        agent = asking.agent
        guardrails = in_order(agent.guardrails, stage=stage)
        if not guardrails:
            return

        async def ask(guardrail: Guardrail, prompt: list[Message]) -> Verdict:
            return await self._verdict(stage, asking, guardrail, prompt)

        values = ValueEvaluator("dollar")
        values.budget.start_step()
        names: Names = {
            "_": value,
            "messages": messages,
            "agent": {k: agent.view.get(k) for k in AGENT_KEYS},
            # The names a task's expressions have, as a chat has them: so an agent's guardrail written for
            # its tasks reads the same here.
            "inputs": [value],
            "outputs": [],
            "steps": [],
            "state": {},
            "task": None,
            "execution": None,
        }
        try:
            await run_guardrails(stage, guardrails, value, names, values, ask)
        except GuardrailTripped as exc:
            raise Refused(exc.reason, error_type=exc.error_type) from None
        except ExpressionError as exc:
            raise Invalid(f"agent {agent.id}'s {stage} guardrails could not run: {exc}") from None

    async def _verdict(
        self, stage: Stage, asking: Asking, guardrail: Guardrail, messages: list[Message]
    ) -> Verdict:
        """A prompt guardrail's model call, under the verdict's JSON schema (within the chat's budget)."""
        agent = asking.agent
        request = ModelRequest(
            model=guardrail.model or agent.model,
            messages=messages,
            settings={},
            tools=[],
            tool_choice=None,
            response_format=RESPONSE_FORMAT,
            at=f"session:{asking.session_id}:guardrails.{stage}.{guardrail.name}",
            owner=Owner(developer_id=asking.developer, agent_id=agent.id),
        )
        where = f"{stage} guardrail {guardrail.name!r}"
        await asking.spending.before_call()
        try:
            answer = await self.models.complete(request)
        except ApplicationError as exc:
            if exc.type == "InvalidModelOutput":
                raise ModelFailed(f"{where}: {exc.message}", error_type="ModelBehaviorError") from None
            if exc.type == "ModelUnavailable":
                raise ModelFailed(f"{where}: {exc.message}") from None
            raise ModelRefused(f"{where}: {exc.message}") from None
        await asking.spending.after_call(answer)
        content = answer.response["choices"][0]["message"].get("content")
        try:
            return verdict_of(content if isinstance(content, str) else None)
        except ValueError as exc:
            raise ModelFailed(f"{where}: {exc}", error_type="ModelBehaviorError") from None


@dataclass(frozen=True)
class Asking:
    """Whose guardrails run, in which session's chat, and the chat's spending their model calls count in."""

    developer: str
    session_id: str
    agent: Agent
    spending: ChatSpending
