"""An agent's tools: each a task-language tool definition (workflows/language), checked as a task's tools are."""

from __future__ import annotations

from contracts.records.pages import Page
from contracts.records.tools import Tool
from infra.store.tables import TOOLS
from services.clients import Clients
from services.errors import Invalid, NotFound
from services.ids import checked_id
from services.store_errors import Conflict
from workflows import ignored_keys
from workflows.language import ToolDef
from workflows.problems import Problem, capped_warnings
from workflows.validate import tool_timeout_problems


def invalid_tool(problems: list[Problem]) -> Invalid:
    return Invalid(
        "invalid tool: " + "; ".join(f"{p.path}: {p.message}" for p in problems), problems=problems
    )


def checked(tool: ToolDef, max_timeout: float) -> list[Problem]:
    """The warnings for the keys of the tool's api_call that Julep v1 ignored (ignored here too); Invalid
    for a timeout over the limit, or a key that cannot be ignored."""
    problems = tool_timeout_problems(tool, "", max_timeout)
    refused, ignored = ignored_keys.api_call_keys(tool.api_call, "")
    if problems + refused:
        raise invalid_tool(problems + refused)
    return capped_warnings(ignored)


async def add(clients: Clients, developer: str, agent_id: str, tool: ToolDef) -> Tool:
    """A new tool (checked by the caller, with `checked`) of the agent, which exists; Conflict if it has one
    of that name."""
    stored_id = checked_id(agent_id, "agent")
    if any(t.name == tool.name for t in await clients.store.agent_tools(developer, stored_id)):
        raise Conflict(f"agent {agent_id} already has a tool named {tool.name!r}")
    return await clients.store.insert(TOOLS, developer, {"agent_id": stored_id, **_values(tool)})


async def find(clients: Clients, developer: str, agent_id: str, page: Page) -> list[Tool]:
    return await clients.store.find(TOOLS, developer, page, parent_id=agent_id)


async def get(clients: Clients, developer: str, agent_id: str, tool_id: str) -> Tool:
    """The agent's tool with this id; NotFound otherwise (another agent's tool too)."""
    tool = await clients.store.get(TOOLS, developer, checked_id(tool_id, "tool"))
    if tool is None or tool.agent_id != checked_id(agent_id, "agent"):
        raise NotFound("tool", tool_id)
    return tool


async def replace(clients: Clients, developer: str, tool_id: str, tool: ToolDef) -> Tool:
    """The tool's definition replaced (checked by the caller, with `checked`); `tool_id` as stored."""
    updated = await clients.store.update(TOOLS, developer, tool_id, _values(tool))
    if updated is None:  # deleted meanwhile
        raise NotFound("tool", tool_id)
    return updated


async def delete(clients: Clients, developer: str, tool_id: str) -> None:
    await clients.store.delete(TOOLS, developer, tool_id)


def _values(tool: ToolDef) -> dict[str, object]:
    spec = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {"name": tool.name, "type": tool.type, "description": tool.description, "spec": spec}
