"""What a chat answers (Julep's chat response), gathered agent by agent."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypedDict

from contracts.calls import ModelAnswer
from contracts.json import JsonObject
from contracts.messages import Choice, Message
from workflows.agents import Agent
from workflows.tool_loop import LoopEnd


class AnswerChoice(Choice, total=False):
    """A choice of a chat's answer: an agent's answer, and which agent gave it."""

    agent_id: str | None


class ChatAnswer(TypedDict):
    """What a chat answers (Julep's chat response)."""

    id: str
    trace_id: str
    created_at: datetime
    choices: list[AnswerChoice]
    usage: dict[str, int]
    docs: list[JsonObject]
    jobs: list[str]
    agent_id: str | None


@dataclass
class Reply:
    """What a chat answers, gathered agent by agent. `answered` holds the messages the agents added (tool
    exchanges, then each answer): what the next agent reads after the request's, and what is saved. The docs
    recalled are as the doc store finds them."""

    choices: list[AnswerChoice] = field(default_factory=list)
    usage: dict[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    )
    recalled: list[JsonObject] = field(default_factory=list)
    answered: list[Message] = field(default_factory=list)
    unsupported: set[str] = field(default_factory=set)  # settings asked for that a provider does not take
    # Known from the start, so that a streamed chat's chunks carry them before the answer is whole.
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def count(self, answer: ModelAnswer) -> None:
        """Add one model call's tokens to the usage."""
        used = answer.usage
        self.usage["prompt_tokens"] += int(used.get("prompt_tokens") or 0)
        self.usage["completion_tokens"] += int(used.get("completion_tokens") or 0)
        self.usage["total_tokens"] += int(used.get("total_tokens") or 0)

    def recall(self, docs: list[JsonObject]) -> None:
        """Add the docs one agent's turn recalled, each once."""
        self.recalled += [d for d in docs if d["id"] not in {r["id"] for r in self.recalled}]

    def add(self, end: LoopEnd[ModelAnswer], agent: Agent, named: bool) -> None:
        """One agent's tool exchanges and answer; with several agents, each answer is named by its agent."""
        self.answered += end.exchange
        choice = end.answer.response["choices"][0]
        message = choice["message"]
        answer = Message(role=message["role"])
        if message.get("content"):
            answer["content"] = message.get("content")
        if message.get("tool_calls"):
            answer["tool_calls"] = message.get("tool_calls")
        if named:
            answer["name"] = agent.name
        self.answered.append(answer)
        # Each choice says which agent answered it: after a handoff, not the one the session named.
        self.choices.append({**choice, "index": len(self.choices), "agent_id": agent.id})

    def response(self) -> ChatAnswer:
        return {
            "id": str(self.id),
            # The chat's trace id (as an execution's is its id's hex digits: infra/telemetry/traces.py).
            "trace_id": self.id.hex,
            "created_at": self.created_at,
            "choices": self.choices,
            "usage": self.usage,
            "docs": self.recalled,
            "jobs": [],
            "agent_id": self.choices[-1].get("agent_id") if self.choices else None,  # who answered last
        }
