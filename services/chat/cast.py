"""Who takes part in one agent's answer, and with which tools."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.store.tables import USERS, Store
from services.chat.request import Chat
from services.sessions import owned_row
from workflows import prompts
from workflows.language import CLIENT_TOOL_TYPES, ToolDef


@dataclass
class Cast:
    """One agent's turn: the agent, the session's users, the agent's tool rows, every tool spec offered
    (the agent's and the request's) by name, and the arguments x-tool-parameters fixes for each."""

    agent: dict[str, Any]
    users: list[dict[str, Any]]
    agent_tools: list[dict[str, Any]]
    specs: dict[str, dict[str, Any]]
    fixed: dict[str, dict[str, Any]]

    def offered_tools(self) -> list[dict[str, Any]]:
        """The tools as the model sees them, without the arguments Mint fills in."""
        return [prompts.offered_tool(spec, self.fixed[name]) for name, spec in self.specs.items()]

    def runs_here(self, call: dict[str, Any]) -> bool:
        """Whether Mint can run this call (a server-side tool); a `function` tool (or Anthropic's built-in
        ones), or one it does not know, only the client can."""
        kind = self.specs.get(call["function"]["name"], {}).get("type")
        return kind is not None and kind not in CLIENT_TOOL_TYPES


async def cast(
    store: Store, developer: str, session: dict[str, Any], agent: dict[str, Any], body: Chat
) -> Cast:
    """Who takes part in one agent's turn and with which tools, read once per turn."""
    users = [u for u in [await owned_row(store, USERS, developer, i) for i in session["users"]] if u]
    agent_tools = await store.agent_tools(developer, agent["id"])
    specs = {t["spec"]["name"]: t["spec"] for t in agent_tools}
    for extra in body.tools or []:
        spec = ToolDef.model_validate(extra).model_dump(mode="json", by_alias=True, exclude_none=True)
        specs[spec["name"]] = spec
    # x-tool-parameters: session over user over agent.
    layers = [agent.get("metadata"), *(u.get("metadata") for u in users), session.get("metadata")]
    fixed = {name: prompts.fixed_arguments(spec, layers) for name, spec in specs.items()}
    return Cast(agent, users, agent_tools, specs, fixed)
