"""Running guardrails (workflows/language/guardrails.py), written once for executions and chats.

Pure: a check guardrail is an expression evaluated by the caller's ValueEvaluator (deterministic inside a
workflow), and a prompt guardrail's model call is a callable the caller gives (an activity in a workflow, the
model client in a chat). The first guardrail that refuses ends the run with a GuardrailTripped, a typed
failure (`InputGuardrailTripwire: ...` / `OutputGuardrailTripwire: ...`) that names the guardrail.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from contracts.json import JsonObject
from contracts.messages import Message
from workflows.dialect import Dialect
from workflows.failures import TypedFailure
from workflows.language.guardrails import Guardrail, Guardrails
from workflows.problems import Problem
from workflows.values import Names, ValueEvaluator, check_value

Stage = Literal["input", "output"]
ERROR_TYPES: dict[Stage, str] = {"input": "InputGuardrailTripwire", "output": "OutputGuardrailTripwire"}
# Names a guardrail may use besides the usual ones: in a chat, `messages` holds the messages checked.
EXTRA_NAMES = frozenset({"messages"})

# What a prompt guardrail's model answers, under a JSON schema (OpenAI's strict structured output).
VERDICT_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"allowed": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["allowed", "reason"],
    "additionalProperties": False,
}
RESPONSE_FORMAT: JsonObject = {
    "type": "json_schema",
    "json_schema": {"name": "guardrail_verdict", "schema": VERDICT_SCHEMA, "strict": True},
}
INSTRUCTIONS = (
    "You are a guardrail. Decide whether the content below may pass. Answer only with JSON: "
    '{"allowed": true or false, "reason": "why, in one sentence"}.'
)


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str


class GuardrailTripped(TypedFailure):
    """A guardrail refused: the failure's text is `<Input|Output>GuardrailTripwire: <message>`."""

    def __init__(self, stage: Stage, guardrail: str, message: str):
        self.stage = stage
        self.guardrail = guardrail
        self.reason = message  # the text after the kind
        super().__init__(ERROR_TYPES[stage], message)

    def details(self) -> JsonObject:
        """What the execution's `error` transition records beside `error_type` (which says the stage)."""
        return {"guardrail": self.guardrail}


# A prompt guardrail's model call: (the guardrail, the messages to send) -> its verdict.
AskModel = Callable[[Guardrail, list[Message]], Awaitable[Verdict]]


def in_order(*layers: Guardrails | JsonObject | None, stage: Stage) -> list[Guardrail]:
    """A stage's guardrails from several owners, in the order given (an execution: the task's, then the
    agent's): every one applies."""
    found: list[Guardrail] = []
    for layer in layers:
        if isinstance(layer, dict):
            layer = Guardrails.model_validate(layer)
        if layer is not None:
            found += getattr(layer, stage)
    return found


async def run_guardrails(
    stage: Stage,
    guardrails: Sequence[Guardrail],
    value: Any,
    names: Names,
    values: ValueEvaluator,
    ask: AskModel,
) -> None:
    """Run each guardrail on `value` (`_`), in order; raise GuardrailTripped at the first that refuses."""
    scope = {**names, "_": value}
    for guardrail in guardrails:
        if guardrail.check is not None:
            if values.expression(guardrail.check, scope):
                continue
            message = values.template(guardrail.message, scope) if guardrail.message else None
            text = _text(message) if message not in (None, "") else _refused(guardrail, stage)
            raise GuardrailTripped(stage, guardrail.name, text)
        assert guardrail.prompt is not None  # a guardrail has a check or a prompt (Guardrail._one_kind)
        prompt = _text(values.template(guardrail.prompt, scope))
        verdict = await ask(guardrail, verdict_messages(prompt))
        if not verdict.allowed:
            raise GuardrailTripped(stage, guardrail.name, verdict.reason or _refused(guardrail, stage))


def user_text(messages: list[Message]) -> str:
    """What an agent's input guardrails check as `_` in a conversation (a chat, or a prompt step handed to
    the agent): the text of its user messages, one per line."""
    texts = []
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
        texts.append(content or "")
    return "\n".join(texts)


def answer_text(message: Message) -> str:
    """What an agent's output guardrails check as `_` in a conversation: the text of its answer."""
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
    return content or ""


def verdict_messages(prompt: str) -> list[Message]:
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": prompt}]


def verdict_of(content: str | None) -> Verdict:
    """A prompt guardrail's answer as a Verdict; ValueError when it is not `{"allowed": bool, "reason": str}`
    (the model client already retried answers that miss the schema, so this is rare)."""
    text = (content or "").strip()
    if text.startswith("```"):  # a fenced answer, as models asked for JSON sometimes give
        text = text.split("\n", 1)[-1].rsplit("```", 1)[0]
    try:
        answer = json.loads(text)
    except ValueError:
        raise ValueError(f"the guardrail's model did not answer JSON: {text[:200]!r}") from None
    if not isinstance(answer, dict) or not isinstance(answer.get("allowed"), bool):
        raise ValueError(
            f'the guardrail\'s model did not answer {{"allowed": bool, "reason": str}}: {text[:200]!r}'
        )
    reason = answer.get("reason")
    return Verdict(answer["allowed"], reason if isinstance(reason, str) else "")


def guardrail_problems(
    guardrails: Guardrails | None, path: str, dialect: Dialect = "dollar"
) -> list[Problem]:
    """The problems with guardrails' expressions and templates (syntax, unknown names), for creation time."""
    if guardrails is None:
        return []
    problems = []
    for field_path, raw, kind in guardrails.fields(path):
        problems += [Problem(field_path, p) for p in check_value(raw, kind, dialect, EXTRA_NAMES)]
    return problems


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _refused(guardrail: Guardrail, stage: Stage) -> str:
    return f"guardrail {guardrail.name!r} refused the {stage}"
