"""Who holds a prompt step's conversation, for handoffs (workflows/handoffs.py) inside the workflow.

The agents a step may be handed to came with the execution's parameters (ExecutionParams.handoff_agents, read
once when it started), so a handoff is pure: it adds no command of its own. Its transfer call is recorded as a
step transition like any tool call, with `handoff: {from, to}` in its output and metadata; the agent that
took over answers the rest of the loop, and the step's transition names it (`agent_id`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contracts.executions import ExecutionParams
from workflows.handoffs import Agent, Handoffs, system_message

Message = dict[str, Any]


@dataclass
class Holder:
    """The agent holding a prompt step's conversation, the tools it offers (by name) with their fixed
    arguments, and its handoffs. A transfer is `pending` until the next model call, so the other tool calls
    of the same round still run as the agent that asked for them."""

    agent: Agent
    tools: dict[str, dict[str, Any]]
    fixed: dict[str, dict[str, Any]]
    handoffs: Handoffs
    pending: Agent | None = None
    moved: bool = False  # a handoff happened: the system message and model are the new agent's

    @classmethod
    def start(
        cls,
        params: ExecutionParams,
        tools: dict[str, dict[str, Any]],
        fixed: dict[str, dict[str, Any]],
        runs_tools: bool,
    ) -> Holder:
        """The execution's agent holds it first; it hands off only where the step runs tools itself."""
        agent = params.agent
        targets = reachable(params, agent) if runs_tools else []
        return cls(agent, tools, fixed, Handoffs.of(agent if runs_tools else {}, targets, set(tools)))

    def hand_over(
        self, tools: dict[str, dict[str, Any]], fixed: dict[str, dict[str, Any]], params: ExecutionParams
    ) -> None:
        """The pending agent takes the conversation, with these tools (its own, described)."""
        target = self.pending
        assert target is not None
        self.agent, self.tools, self.fixed = target, tools, fixed
        self.handoffs = Handoffs.of(target, reachable(params, target), set(tools))
        self.pending, self.moved = None, True

    def conversation(self, messages: list[Message]) -> list[Message]:
        """What the model reads: after a handoff, the new agent's system message instead of the step's."""
        if not self.moved:
            return messages
        head = {"role": "system", "content": system_message(self.agent)}
        return [head, *(m for m in messages if m.get("role") != "system")]


def reachable(params: ExecutionParams, agent: Agent) -> list[Agent]:
    """The agents `agent` may hand off to, as the execution read them at its start, in the agent's order."""
    known = params.handoff_agents
    return [known[i] for i in agent.get("handoffs") or [] if i in known]
