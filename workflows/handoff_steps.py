"""Handoffs (workflows/handoffs.py) in a prompt step: who holds the step's conversation (Holder), the transfer
call's transition (record_transfer) and the target taking the step's request over (hand_over). CallSteps
runs the loop; this module is what a handoff changes in it.

The agents a step may be handed to came with the execution's parameters (ExecutionParams.handoff_agents, read
once when it started), so a handoff reads nothing (only a target's MCP tools are listed, as any step's are).
Its transfer call is recorded as a step transition like any tool call, with `handoff: {from, to}` in its
output and metadata; the agent that took over answers the rest of the loop, and the step's transition names
it (`agent_id`).
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import workflow

from contracts.calls import ModelRequest, Owner
from contracts.executions import ExecutionParams
from contracts.json import JsonObject
from contracts.messages import Message, ToolCall
from contracts.transitions import Position
from workflows import language as lang
from workflows import prompts, references
from workflows.agents import Agent
from workflows.failures import TypedFailure
from workflows.handoffs import HandoffRefused, Handoffs, handoff_record, system_message, transfer_data
from workflows.mcp_listing import described
from workflows.step_runner import StepRunner
from workflows.tool_kinds import Tool, parse_tools
from workflows.transition_log import TransitionLog


@dataclass
class Holder:
    """The agent holding a prompt step's conversation, the tools it offers (by name) with their fixed
    arguments, and its handoffs. A transfer is `pending` until the next model call, so the other tool calls
    of the same round still run as the agent that asked for them."""

    agent: Agent
    tools: dict[str, Tool]
    fixed: dict[str, JsonObject]
    handoffs: Handoffs
    pending: Agent | None = None
    moved: bool = False  # a handoff happened: the system message and model are the new agent's

    @classmethod
    def start(
        cls,
        params: ExecutionParams,
        agent: Agent,
        tools: dict[str, Tool],
        fixed: dict[str, JsonObject],
        runs_tools: bool,
    ) -> Holder:
        """The execution's agent holds it first; it hands off only where the step runs tools itself."""
        targets = reachable(params, agent) if runs_tools else []
        return cls(agent, tools, fixed, Handoffs.of(agent if runs_tools else Agent(), targets, set(tools)))

    def hand_over(
        self, tools: dict[str, Tool], fixed: dict[str, JsonObject], params: ExecutionParams
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
        head: Message = {"role": "system", "content": system_message(self.agent)}
        return [head, *(m for m in messages if m.get("role") != "system")]


def reachable(params: ExecutionParams, agent: Agent) -> list[Agent]:
    """The agents `agent` may hand off to, as the execution read them at its start, in the agent's order."""
    known = params.handoff_agents
    return [Agent.of(known[i]) for i in agent.handoffs if i in known]


async def record_transfer(
    log: TransitionLog,
    holder: Holder,
    call: ToolCall,
    position: Position,
    metadata: JsonObject,
    here: str,
) -> JsonObject:
    """A transfer call: the target takes the conversation at the next model call; one outside the agent's
    handoffs fails the execution (HandoffError). Recorded as the step transition of the call, with
    `handoff: {from, to, ...}` in its metadata (what a trace's `handoff` item reads)."""
    try:
        target = holder.handoffs.target(call)
    except HandoffRefused as exc:
        raise TypedFailure("HandoffError", f"{here}: {exc}") from None
    if holder.pending is None:  # the first transfer of a round wins
        holder.pending = target
    record = handoff_record(holder.agent, holder.pending)
    now = workflow.time()
    result = prompts.tool_result("success", now, now, transfer_data(holder.agent, holder.pending))
    name = call["function"]["name"]
    log.add(
        "step",
        {"tool_call": {"id": call["id"], "name": name, "arguments": call["function"].get("arguments")}}
        | {"result": result, "handoff": record},
        position,
        position,
        metadata={**metadata, "tool": name, "handoff": record},
    )
    return result


def answered_by(holder: Holder, output: object) -> str | None:
    """After a handoff, the id of the agent that answered the step (also put in its output, when that is a
    completion); None when the step's own agent did."""
    if not holder.moved:
        return None
    if isinstance(output, dict):
        output["agent_id"] = holder.agent.id
    return holder.agent.id


async def hand_over(
    runner: StepRunner, holder: Holder, request: ModelRequest, step: lang.PromptStep, here: str
) -> None:
    """The pending agent takes the prompt step over from the next call: its tools (MCP ones described by
    their server), model and handoffs go on the step's request."""
    params, target = runner.params, holder.pending
    assert target is not None
    tools = await described(runner, parse_tools(list(target.tools)), step, here)
    layers = [target.metadata, *prompts.metadata_layers(params)[1:]]
    fixed = {name: prompts.fixed_arguments(tool, layers) for name, tool in tools.items()}
    holder.hand_over(tools, fixed, params)
    # The settings layer the agent gave is now the target's; the task's and the step's still apply.
    task = runner.task
    _, settings = references.split_settings(  # pass-by-reference settings are Mint's, not the model's
        {
            **(target.default_settings or {}),
            **((task.defaults.settings if task.defaults else None) or {}),
            **(step.settings or {}),
        }
    )
    settings.pop("response_format", None)  # kept on the request as the step asked
    models = (target.setting("model"), target.model, settings.pop("model", None))
    request.model = next((m for m in models if isinstance(m, str) and m), request.model)
    request.settings = settings
    request.tool_choice = None  # the step's choice named the tools of the agent it started with
    # Still the execution's call: call_model charges the budget of the workflow it runs in, not this field.
    request.owner = Owner(params.developer_id, target.id, params.execution_id)
    request.tools = [prompts.offered_tool(tool, fixed[name]) for name, tool in tools.items()]
    request.tools += holder.handoffs.offered()
