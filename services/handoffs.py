"""Reading handoffs: the agents an agent may hand a conversation to, checked when an agent is
written and read, with their tools, when an execution starts or a chat hands over."""

from __future__ import annotations

import asyncio

from contracts.json import JsonObject
from contracts.records.agents import Agent
from infra.store.tables import AGENTS, Store
from services.errors import Invalid, NotFound
from services.sessions import owned

# The most agents one execution carries in its parameters (the starting agent's handoffs, theirs, and so on):
# a chain longer than this is cut off there, rather than copying a developer's whole roster into Temporal.
MAX_REACHABLE_AGENTS = 50

# What an execution knows of each agent it may be handed to (the keys the interpreter reads), agent_view's.
AGENT_VIEW_KEYS = ("id", "name", "about", "model", "instructions", "metadata", "default_settings", "handoffs")


def agent_view(agent: Agent) -> JsonObject:
    """The agent as an execution knows it (AGENT_VIEW_KEYS, in that order), as stored."""
    return {
        "id": agent.id,
        "name": agent.name,
        "about": agent.about,
        "model": agent.model,
        "instructions": agent.instructions,
        "metadata": agent.metadata,
        "default_settings": agent.default_settings,
        "handoffs": [*agent.handoffs],
    }


async def checked_handoffs(store: Store, developer: str, ids: list[str], own_id: str | None) -> list[str]:
    """The ids as stored (each once, in order), each one of the developer's agents: another developer's id is
    not found, like an id that names nothing."""
    unique = list(dict.fromkeys(ids))
    if own_id is not None and own_id in unique:
        raise Invalid(f"handoffs: agent {own_id} cannot hand off to itself")
    agents = await asyncio.gather(*(owned(store, AGENTS, developer, id_) for id_ in unique))
    for id_, agent in zip(unique, agents, strict=True):
        if agent is None:
            raise NotFound("agent", id_)
    return [agent.id for agent in agents if agent is not None]


async def handoff_targets(store: Store, developer: str, agent: Agent) -> list[Agent]:
    """The agents `agent` may hand off to, in its list's order; deleted ones are left out."""
    targets = await asyncio.gather(*(owned(store, AGENTS, developer, i) for i in agent.handoffs))
    return [target for target in targets if target is not None]


async def reachable_agents(store: Store, developer: str, agent: Agent) -> dict[str, JsonObject]:
    """Every agent a conversation that starts with `agent` could be handed to, by id, each as agent_view has
    it with its own tools (`tools`: their task-language specs): what an execution reads once, at its start,
    so that a handoff inside the workflow is deterministic. Empty when the agent hands off to nobody (the
    common case costs nothing)."""
    found: dict[str, JsonObject] = {}
    frontier = [agent]
    while frontier and len(found) < MAX_REACHABLE_AGENTS:
        wanted = {i for a in frontier for i in a.handoffs} - found.keys() - {agent.id}
        wanted_ids = sorted(wanted)[: MAX_REACHABLE_AGENTS - len(found)]
        targets = [
            t for t in await asyncio.gather(*(store.get(AGENTS, developer, i) for i in wanted_ids)) if t
        ]
        tools = await asyncio.gather(*(store.agent_tools(developer, t.id) for t in targets))
        for target, its_tools in zip(targets, tools, strict=True):
            found[target.id] = {**agent_view(target), "tools": [t.spec for t in its_tools]}
            if target.guardrails:  # whichever agent answers a prompt step, its guardrails apply
                found[target.id]["guardrails"] = target.guardrails
        frontier = targets
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
        targets = await asyncio.gather(*(owned(store, AGENTS, developer, i) for i in wanted))
        frontier = [target for target in targets if target is not None]
    return False
