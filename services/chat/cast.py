"""Who takes part in one agent's answer, and with which tools."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from contracts.json import JsonObject
from contracts.messages import ToolCall
from contracts.records.agents import Agent as StoredAgent
from contracts.records.tools import Tool as StoredTool
from contracts.records.users import User
from infra.store.tables import USERS, Store
from services.chat.request import Chat
from services.chat.session import ChatSession
from services.handoffs import agent_view
from services.sessions import owned
from workflows import prompts
from workflows.agents import Agent
from workflows.language import ToolDef
from workflows.tool_kinds import Tool, parse_tool, runs_on_client


@dataclass
class Cast:
    """One agent's turn: the agent (as it acts, and as stored), the session's users, the agent's own tools,
    every tool offered (the agent's and the request's) by name, as stored (`specs`, what a tool's run takes)
    and as its kind (`tools`), and the arguments x-tool-parameters fixes for each."""

    agent: Agent
    stored: StoredAgent
    users: Sequence[User]
    agent_tools: Sequence[StoredTool]
    specs: dict[str, JsonObject]
    tools: dict[str, Tool]
    fixed: dict[str, JsonObject]

    def offered_tools(self) -> list[JsonObject]:
        """The tools as the model sees them, without the arguments Mint fills in."""
        return [prompts.offered_tool(tool, self.fixed[name]) for name, tool in self.tools.items()]

    def runs_here(self, call: ToolCall) -> bool:
        """Whether Mint can run this call (a server-side tool); a `function` tool (or Anthropic's built-in
        ones), or one it does not know, only the client can."""
        tool = self.tools.get(call["function"]["name"])
        return tool is not None and not runs_on_client(tool)


def acting(agent: StoredAgent) -> Agent:
    """The agent as a chat's turn runs it (workflows/agents.py): what an execution knows of it, and its
    guardrails."""
    return Agent.of({**agent_view(agent), "guardrails": agent.guardrails})


async def cast(store: Store, developer: str, session: ChatSession, stored: StoredAgent, body: Chat) -> Cast:
    """Who takes part in one agent's turn and with which tools, read once per turn."""
    # The users and the agent's tools, read at once.
    found, agent_tools = await asyncio.gather(
        asyncio.gather(*(owned(store, USERS, developer, i) for i in session.users)),
        store.agent_tools(developer, stored.id),
    )
    users = [u for u in found if u]
    specs: dict[str, JsonObject] = {t.name: t.spec for t in agent_tools}
    for extra in body.tools or []:
        spec = ToolDef.model_validate(extra).model_dump(mode="json", by_alias=True, exclude_none=True)
        specs[spec["name"]] = spec
    tools = {name: parse_tool(spec) for name, spec in specs.items()}
    # x-tool-parameters: session over user over agent.
    layers = [stored.metadata, *(u.metadata for u in users), session.metadata]
    fixed = {name: prompts.fixed_arguments(tool, layers) for name, tool in tools.items()}
    return Cast(acting(stored), stored, users, agent_tools, specs, tools, fixed)
