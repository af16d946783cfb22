"""Reading handoffs: the agents an agent may hand a conversation to, checked when an agent is
written and read, with their tools, when an execution starts or a chat hands over."""

from __future__ import annotations

import asyncio

from contracts.json import JsonObject
from infra.store.tables import AGENTS, Store
from services.errors import Invalid, NotFound
from services.sessions import owned_row
from workflows.agents import Agent

# The most agents one execution carries in its parameters (the starting agent's handoffs, theirs, and so on):
# a chain longer than this is cut off there, rather than copying a developer's whole roster into Temporal.
MAX_REACHABLE_AGENTS = 50

# What an execution knows of each agent it may be handed to (the keys the interpreter reads).
AGENT_VIEW_KEYS = ("id", "name", "about", "model", "instructions", "metadata", "default_settings", "handoffs")


async def checked_handoffs(store: Store, developer: str, ids: list[str], own_id: str | None) -> list[str]:
    """The ids as stored (each once, in order), each one of the developer's agents: another developer's id is
    not found, like an id that names nothing."""
    unique = list(dict.fromkeys(ids))
    if own_id is not None and own_id in unique:
        raise Invalid(f"handoffs: agent {own_id} cannot hand off to itself")
    rows = await asyncio.gather(*(owned_row(store, AGENTS, developer, id_) for id_ in unique))
    for id_, row in zip(unique, rows, strict=True):
        if row is None:
            raise NotFound("agent", id_)
    return [row["id"] for row in rows if row is not None]


async def handoff_targets(store: Store, developer: str, agent: Agent) -> list[Agent]:
    """The agents `agent` may hand off to, in its list's order; deleted ones are left out."""
    rows = await asyncio.gather(*(owned_row(store, AGENTS, developer, i) for i in agent.handoffs))
    return [Agent.of(row) for row in rows if row is not None]


async def reachable_agents(store: Store, developer: str, agent: JsonObject) -> dict[str, JsonObject]:
    """Every agent a conversation that starts with `agent` (its row) could be handed to, by id, each with its
    own tools (`tools`: their task-language specs): what an execution reads once, at its start, so that a
    handoff inside the workflow is deterministic. Empty when the agent hands off to nobody (the common case
    costs nothing)."""
    found: dict[str, JsonObject] = {}
    start = Agent.of(agent)
    frontier = [start]
    while frontier and len(found) < MAX_REACHABLE_AGENTS:
        wanted = {i for a in frontier for i in a.handoffs} - found.keys() - {start.id}
        wanted_ids = sorted(wanted)[: MAX_REACHABLE_AGENTS - len(found)]
        rows = [r for r in await asyncio.gather(*(store.get(AGENTS, developer, i) for i in wanted_ids)) if r]
        tools = await asyncio.gather(*(store.agent_tools(developer, r["id"]) for r in rows))
        for row, tool_rows in zip(rows, tools, strict=True):
            found[row["id"]] = {
                **{k: row.get(k) for k in AGENT_VIEW_KEYS},
                "tools": [t["spec"] for t in tool_rows],
            }
            if row.get("guardrails"):  # whichever agent answers a prompt step, its guardrails apply
                found[row["id"]]["guardrails"] = row["guardrails"]
        frontier = [Agent.of(row) for row in rows]
    return found


async def reaches_output_guardrails(store: Store, developer: str, agent: Agent) -> bool:
    """Whether `agent`, or an agent a chat could be handed to from it (its handoffs, theirs, and so on), has
    output guardrails: then a streamed chat holds the answer back until they pass. Past MAX_REACHABLE_AGENTS
    agents it says yes: holding back costs only the text's liveness, never what a guardrail refuses."""
    seen = {agent.id}
    frontier = [agent]
    while frontier:
        if any((a.guardrails or {}).get("output") for a in frontier):
            return True
        wanted = list(dict.fromkeys(i for a in frontier for i in a.handoffs if i not in seen))
        seen.update(wanted)
        if len(seen) > MAX_REACHABLE_AGENTS:
            return True
        rows = await asyncio.gather(*(owned_row(store, AGENTS, developer, i) for i in wanted))
        frontier = [Agent.of(row) for row in rows if row is not None]
    return False
