"""Agents: created, read, replaced, patched and deleted, each change checked (guardrails, handoffs, project)."""

from __future__ import annotations

from typing_extensions import TypedDict

from contracts.json import JsonObject
from contracts.records.agents import Agent
from contracts.records.pages import Page
from infra.store.projects import DEFAULT
from infra.store.tables import AGENTS
from services.canonical import canonical_name
from services.clients import Clients
from services.errors import Invalid, NotFound
from services.handoffs import checked_handoffs
from services.ids import checked_id
from services.project_names import project_named
from workflows.guardrails import guardrail_problems
from workflows.language import Guardrails
from workflows.problems import Problem


class AgentChange(TypedDict, total=False):
    """What a request gives an agent (a key left out is left as it is, where the request changes one)."""

    name: str | None
    about: str | None
    model: str | None
    instructions: str | list[str] | None
    default_settings: JsonObject | None
    default_system_template: str | None
    canonical_name: str | None
    project: str | None
    metadata: JsonObject | None
    handoffs: list[str] | None  # ids of the developer's other agents
    guardrails: Guardrails | None


async def create(clients: Clients, developer: str, change: AgentChange) -> Agent:
    values = await _checked(clients, developer, _values(change))
    return await clients.store.insert(AGENTS, developer, _named(values))


async def find(clients: Clients, developer: str, page: Page) -> list[Agent]:
    return await clients.store.find(AGENTS, developer, page)


async def get(clients: Clients, developer: str, agent_id: str) -> Agent:
    """The developer's agent with this id; NotFound otherwise."""
    agent = await clients.store.get(AGENTS, developer, checked_id(agent_id, "agent"))
    if agent is None:
        raise NotFound("agent", agent_id)
    return agent


async def create_or_update(clients: Clients, developer: str, agent_id: str, change: AgentChange) -> Agent:
    """Julep's create-or-update: the whole agent replaced, or created with this id (into the `default`
    project, naming none)."""
    agent_id = checked_id(agent_id, "agent")
    values = await _checked(clients, developer, _values(change), agent_id, DEFAULT)
    updated = await clients.store.update(AGENTS, developer, agent_id, values)
    if updated is not None:
        return updated
    return await clients.store.insert(AGENTS, developer, _named(values), id_=agent_id)


async def reset(clients: Clients, developer: str, agent_id: str, change: AgentChange) -> Agent:
    """The whole agent replaced (it stays in its project, naming none)."""
    agent_id = checked_id(agent_id, "agent")
    values = await _checked(clients, developer, _values(change), agent_id)
    updated = await clients.store.update(AGENTS, developer, agent_id, values)
    if updated is None:
        raise NotFound("agent", agent_id)
    return updated


async def patch(clients: Clients, developer: str, agent_id: str, change: AgentChange) -> Agent:
    """The keys given changed; metadata merged into the agent's."""
    values = _with_guardrails(change)
    if "name" in values and values["name"] is None:
        raise Invalid("name cannot be null", problems=[Problem("body.name", "an agent needs a name")])
    agent = await get(clients, developer, agent_id)
    if "metadata" in values:
        given = values["metadata"]
        values["metadata"] = {**agent.metadata, **(given if isinstance(given, dict) else {})}
    values = await _checked(clients, developer, values, agent.id)
    updated = await clients.store.update(AGENTS, developer, agent.id, values)
    if updated is None:  # deleted meanwhile
        raise NotFound("agent", agent_id)
    return updated


async def delete(clients: Clients, developer: str, agent_id: str) -> None:
    """The agent gone, with its docs (they have no foreign key to their owner, an agent or a user)."""
    if not await clients.store.delete(AGENTS, developer, checked_id(agent_id, "agent")):
        raise NotFound("agent", agent_id)
    await clients.docs.delete_matching(developer, "agent", checked_id(agent_id, "agent"), None)


def _values(change: AgentChange) -> dict[str, object]:
    values = _with_guardrails(change)
    values["metadata"] = values.get("metadata") or {}
    if values.get("canonical_name") is None:
        values.pop("canonical_name", None)  # an update that names none keeps the agent's
    return values


def _named(values: dict[str, object]) -> dict[str, object]:
    """A new agent's values with a canonical name: as on Julep, one is made when none is given (an identifier
    from its name, and a random suffix)."""
    if values.get("canonical_name"):
        return values
    name = values.get("name")
    return {**values, "canonical_name": canonical_name(name if isinstance(name, str) else None, "agent")}


async def _checked(
    clients: Clients,
    developer: str,
    values: dict[str, object],
    agent_id: str | None = None,
    project: str | None = None,
) -> dict[str, object]:
    """The values with their handoffs checked to be the developer's own other agents (null is none), and
    the project they name checked to exist (Julep's 404). Naming none, the agent goes into `project` if given
    (Julep's create-or-update puts it in `default`) and otherwise stays where it is (a new one in none, as
    Julep's POST /agents leaves it)."""
    if "handoffs" in values:
        handoffs = values["handoffs"]
        ids = [str(id_) for id_ in handoffs] if isinstance(handoffs, list) else []
        values["handoffs"] = await checked_handoffs(clients.store, developer, ids, agent_id)
    named = values.pop("project", None) or project
    if isinstance(named, str) and named:
        values["project"] = await project_named(clients, developer, named)
    return values


def _with_guardrails(change: AgentChange) -> dict[str, object]:
    """The change's values, its guardrails as stored (as written, unset fields left out) once their
    expressions and templates are checked; Invalid names each problem's path."""
    values: dict[str, object] = {key: value for key, value in change.items() if key != "guardrails"}
    if "guardrails" not in change:
        return values
    guardrails = change["guardrails"]
    if guardrails is None:
        return {**values, "guardrails": None}
    problems = guardrail_problems(guardrails, "body.guardrails")
    if problems:
        summary = "; ".join(f"{p.path}: {p.message}" for p in problems[:5])
        raise Invalid(f"invalid guardrails: {summary}", problems=problems)
    return {**values, "guardrails": guardrails.dump()}
