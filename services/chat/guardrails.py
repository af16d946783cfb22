"""Guardrails in a chat (workflows/guardrails.py runs them): every answering agent's input guardrails on the
user's new messages, before any model is asked, and each agent's output guardrails on its answer.

Here in the API process, check expressions run in the same expression sandbox as in a workflow (a fresh
evaluator per run: outside a workflow nothing needs to replay), and a prompt guardrail asks its model through
the model client. A refusal is a 400 of type `InputGuardrailTripwire` or `OutputGuardrailTripwire`; the chat
then saves nothing (Chatter saves only once every agent has answered).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio.exceptions import ApplicationError

from mint.models.client import ModelClient
from services.errors import Invalid, ModelFailed, ModelRefused, Refused
from workflows.guardrails import (
    RESPONSE_FORMAT,
    GuardrailTripped,
    Stage,
    Verdict,
    in_order,
    run_guardrails,
    verdict_of,
)
from workflows.language import Guardrail
from workflows.sandbox.expressions import ExpressionError
from workflows.values import ValueEvaluator

CountUsage = Callable[[dict[str, Any]], None]  # adds a model call's usage to the chat's answer
AGENT_KEYS = ("id", "name", "about", "model", "instructions", "metadata", "default_settings")


def user_text(messages: list[dict[str, Any]]) -> str:
    """What input guardrails check as `_`: the text of the request's user messages, one per line."""
    texts = []
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
        texts.append(content or "")
    return "\n".join(texts)


class ChatGuardrails:
    def __init__(self, models: ModelClient):
        self.models = models

    async def check_input(
        self, session_id: str, agent: dict[str, Any], messages: list[dict[str, Any]], count: CountUsage
    ) -> None:
        """The agent's input guardrails on the request's messages (`_` is their user text)."""
        await self._run("input", session_id, agent, user_text(messages), messages, count)

    async def check_output(
        self, session_id: str, agent: dict[str, Any], message: dict[str, Any], count: CountUsage
    ) -> None:
        """The agent's output guardrails on its answer (`_` is the answer's text)."""
        await self._run("output", session_id, agent, message.get("content") or "", [message], count)

    async def _run(
        self,
        stage: Stage,
        session_id: str,
        agent: dict[str, Any],
        value: Any,
        messages: list[dict[str, Any]],
        count: CountUsage,
    ) -> None:
        guardrails = in_order(agent.get("guardrails"), stage=stage)
        if not guardrails:
            return

        async def ask(guardrail: Guardrail, prompt: list[dict[str, Any]]) -> Verdict:
            return await self._verdict(stage, session_id, agent, guardrail, prompt, count)

        values = ValueEvaluator("dollar")
        values.budget.start_step()
        names = {
            "_": value,
            "messages": messages,
            "agent": {k: agent.get(k) for k in AGENT_KEYS},
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
            raise Invalid(f"agent {agent['id']}'s {stage} guardrails could not run: {exc}") from None

    async def _verdict(
        self,
        stage: Stage,
        session_id: str,
        agent: dict[str, Any],
        guardrail: Guardrail,
        messages: list[dict[str, Any]],
        count: CountUsage,
    ) -> Verdict:
        """A prompt guardrail's model call, under the verdict's JSON schema."""
        request = {
            "model": guardrail.model or agent.get("model"),
            "messages": messages,
            "settings": {},
            "response_format": RESPONSE_FORMAT,
            "tools": [],
            "at": f"session:{session_id}:guardrails.{stage}.{guardrail.name}",
            "owner": {"developer_id": agent["developer_id"], "agent_id": agent["id"]},
        }
        where = f"{stage} guardrail {guardrail.name!r}"
        try:
            answer = await self.models.complete(request)
        except ApplicationError as exc:
            if exc.type == "InvalidModelOutput":
                raise ModelFailed(f"{where}: {exc.message}", error_type="ModelBehaviorError") from None
            if exc.type == "ModelUnavailable":
                raise ModelFailed(f"{where}: {exc.message}") from None
            raise ModelRefused(f"{where}: {exc.message}") from None
        count(answer)
        try:
            return verdict_of(answer["response"]["choices"][0]["message"].get("content"))
        except ValueError as exc:
            raise ModelFailed(f"{where}: {exc}", error_type="ModelBehaviorError") from None
