"""Handoffs (as in JAF): an agent with `handoffs` offers the model one `transfer_to_<name>` tool per agent
it may hand the conversation to; calling one hands the rest of the tool loop to that agent (its instructions,
model and tools). A transfer to an agent outside the list is a HandoffError.

Pure: shared by prompt steps inside the workflow sandbox (workflows/handoff_steps.py) and by chat
(services/chat/chatter.py), each of which reads the agents its own way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from contracts.json import JsonObject
from contracts.messages import ToolCall
from workflows.agents import Agent

TRANSFER_PREFIX = "transfer_to_"
MAX_TOOL_NAME = 64  # the longest function name OpenAI accepts
MAX_DESCRIPTION = 1000  # of a transfer tool, from the target's about or instructions


class HandoffRefused(Exception):
    """The model called a transfer tool for an agent the current agent may not hand off to: a HandoffError."""


def transfer_tool_name(agent_name: str) -> str:
    """`transfer_to_<name>`, the agent's name made a valid function name (letters, digits, `_`, `-`)."""
    slug = re.sub(r"[^a-z0-9_-]+", "_", agent_name.lower()).strip("_") or "agent"
    return (TRANSFER_PREFIX + slug)[:MAX_TOOL_NAME]


def _description(agent: Agent) -> str:
    """What the model reads to choose a transfer: the target's `about`, else its instructions."""
    instructions = agent.instructions
    if isinstance(instructions, tuple):
        instructions = "; ".join(instructions)
    said = agent.about or instructions or ""
    text = f"Hand the conversation to {agent.label}" + (f": {said}" if said else ".")
    return text[:MAX_DESCRIPTION]


def system_message(agent: Agent) -> str:
    """The system message an agent's turn starts with after a handoff in a prompt step: who it is, what it is
    about and its instructions (chat renders the session's system template instead)."""
    parts = []
    if agent.name:
        parts.append(f"You are {agent.name}.")
    if agent.about:
        parts.append(f"About you: {agent.about}.")
    text = " ".join(parts)
    instructions = agent.instructions
    if isinstance(instructions, str) and instructions:
        text += f"\n\nInstructions:\n{instructions}"
    elif isinstance(instructions, tuple) and instructions:
        text += "\n\nInstructions:\n" + "\n".join(f"- {i}" for i in instructions)
    return text.strip()


@dataclass
class Handoffs:
    """The transfer tools of one agent: `by_tool` maps each tool's name to the agent it hands off to.
    `taken` are the names of the agent's own tools, which a transfer tool never shadows."""

    agent: Agent
    by_tool: dict[str, Agent] = field(default_factory=dict)
    taken: frozenset[str] = frozenset()

    @classmethod
    def of(cls, agent: Agent, targets: list[Agent], taken: set[str] | frozenset[str]) -> Handoffs:
        """Name one tool per target, in the agent's order; a name already used gets `_2`, `_3`, ..."""
        by_tool: dict[str, Agent] = {}
        for target in targets:
            base = transfer_tool_name(target.label)
            name, n = base, 2
            while name in by_tool or name in taken:
                suffix = f"_{n}"
                name, n = base[: MAX_TOOL_NAME - len(suffix)] + suffix, n + 1
            by_tool[name] = target
        return cls(agent, by_tool, frozenset(taken))

    @property
    def active(self) -> bool:
        """Whether the agent hands off at all (only then is a stray `transfer_to_...` call a HandoffError)."""
        return bool(self.agent.handoffs)

    def offered(self) -> list[JsonObject]:
        """The transfer tools as the model sees them (OpenAI function format, no arguments)."""
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": _description(target),
                    "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
                },
            }
            for name, target in self.by_tool.items()
        ]

    def is_transfer(self, call: ToolCall) -> bool:
        """Whether a tool call asks for a handoff (a known transfer tool, or a made-up `transfer_to_...`)."""
        name = call["function"]["name"]
        if name in self.by_tool:
            return True
        return self.active and name.startswith(TRANSFER_PREFIX) and name not in self.taken

    def target(self, call: ToolCall) -> Agent:
        """The agent a transfer call hands to; HandoffRefused when it is not one of the agent's handoffs."""
        name = call["function"]["name"]
        if name in self.by_tool:
            return self.by_tool[name]
        allowed = ", ".join(sorted(self.by_tool)) or "none"
        who = self.agent.name or self.agent.id
        raise HandoffRefused(
            f"the model called {name!r}, but agent {who} may hand off only with these tools: {allowed}"
        )


def transfer_data(source: Agent, target: Agent) -> JsonObject:
    """What the model reads back from a transfer: that it happened, and to whom."""
    return {
        "handoff": handoff_record(source, target),
        "message": f"The conversation was handed to {target.label}, who answers from here.",
    }


def handoff_record(source: Agent, target: Agent) -> JsonObject:
    """A handoff as transitions and traces record it."""
    return {"from": source.id, "to": target.id, "from_name": source.name, "to_name": target.name}
