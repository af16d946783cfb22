"""Agents and their tools."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from pydantic import ValidationError

from api import schemas
from api.canonical import canonical_name
from api.deps import Developer, PageDep, StoreDep, checked_id
from api.errors import ERROR_RESPONSES, ApiError, not_found
from api.routes.projects import project_or_404
from api.warning_header import note_ignored
from infra.models.catalog import available_models
from infra.store.docs import DocStore
from infra.store.projects import DEFAULT
from infra.store.tables import AGENTS, TOOLS, Store
from services.handoffs import checked_handoffs
from workflows import ignored_keys
from workflows.guardrails import guardrail_problems
from workflows.language import ToolDef
from workflows.plain_errors import plain_problems
from workflows.problems import Problem, capped_warnings
from workflows.validate import tool_timeout_problems

router = APIRouter(tags=["agents"], responses=ERROR_RESPONSES)


@router.get("/agents/models")
async def list_models(developer: Developer, request: Request) -> dict[str, Any]:
    """The models this Mint can call (from the providers configured on it)."""
    config = request.app.state.settings.model_config()
    return {"models": [{"id": model} for model in await available_models(config)]}


@router.post("/agents", status_code=201, response_model=schemas.Agent)
async def create_agent(body: schemas.AgentCreate, developer: Developer, store: StoreDep) -> Any:
    values = await _checked(store, developer, _agent_values(body))
    return await store.insert(AGENTS, developer, _named(values))


@router.get("/agents", response_model=schemas.ItemList[schemas.Agent])
async def list_agents(developer: Developer, store: StoreDep, page: PageDep) -> Any:
    return {"items": await store.find(AGENTS, developer, page)}


@router.get("/agents/{agent_id}", response_model=schemas.Agent)
async def get_agent(agent_id: str, developer: Developer, store: StoreDep) -> Any:
    return await agent_or_404(store, developer, agent_id)


@router.post("/agents/{agent_id}", status_code=201, response_model=schemas.Agent)
async def create_or_update_agent(
    agent_id: str, body: schemas.AgentCreate, developer: Developer, store: StoreDep
) -> Any:
    agent_id = checked_id(agent_id, "agent")
    values = await _checked(store, developer, _agent_values(body, replace=True), agent_id, DEFAULT)
    updated = await store.update(AGENTS, developer, agent_id, values)
    return updated or await store.insert(AGENTS, developer, _named(values), id_=agent_id)


@router.put("/agents/{agent_id}", response_model=schemas.Agent)
async def reset_agent(agent_id: str, body: schemas.AgentCreate, developer: Developer, store: StoreDep) -> Any:
    agent_id = checked_id(agent_id, "agent")
    values = await _checked(store, developer, _agent_values(body, True), agent_id)
    updated = await store.update(AGENTS, developer, agent_id, values)
    if updated is None:
        raise not_found("agent", agent_id)
    return updated


@router.patch("/agents/{agent_id}", response_model=schemas.Agent)
async def patch_agent(agent_id: str, body: schemas.AgentPatch, developer: Developer, store: StoreDep) -> Any:
    values = _with_guardrails(body, body.model_dump(exclude_unset=True))
    if "name" in values and values["name"] is None:
        raise ApiError(422, "name cannot be null", [Problem("body.name", "an agent needs a name")])
    agent = await agent_or_404(store, developer, agent_id)
    if "metadata" in values:
        values["metadata"] = {**agent["metadata"], **(values["metadata"] or {})}
    return await store.update(
        AGENTS, developer, agent["id"], await _checked(store, developer, values, agent["id"])
    )


@router.delete("/agents/{agent_id}", response_model=schemas.ResourceDeleted, status_code=202)
async def delete_agent(agent_id: str, developer: Developer, store: StoreDep) -> Any:
    if not await store.delete(AGENTS, developer, checked_id(agent_id, "agent")):
        raise not_found("agent", agent_id)
    # Docs have no foreign key to their owner (an agent or a user): they go with it here.
    await DocStore(store.pool).delete_matching(developer, "agent", checked_id(agent_id, "agent"), None)
    return {"id": agent_id, "deleted_at": datetime.now(UTC)}


# Tools -------------------------------------------------------------------------------------------------------


@router.post("/agents/{agent_id}/tools", status_code=201, response_model=schemas.Tool)
async def create_tool(
    agent_id: str, body: dict[str, Any], request: Request, developer: Developer, store: StoreDep
) -> Any:
    agent = await agent_or_404(store, developer, agent_id)
    tool, warnings = _tool_def(body, request)
    if any(t["name"] == tool.name for t in await store.agent_tools(developer, agent["id"])):
        raise ApiError(409, f"agent {agent_id} already has a tool named {tool.name!r}")
    row = await store.insert(TOOLS, developer, {"agent_id": agent["id"], **_tool_values(tool)})
    return {**tool_out(row), "warnings": warnings}


@router.get("/agents/{agent_id}/tools", response_model=schemas.ItemList[schemas.Tool])
async def list_tools(agent_id: str, developer: Developer, store: StoreDep, page: PageDep) -> Any:
    agent = await agent_or_404(store, developer, agent_id)
    return {"items": [tool_out(t) for t in await store.find(TOOLS, developer, page, parent_id=agent["id"])]}


@router.put("/agents/{agent_id}/tools/{tool_id}", response_model=schemas.Tool)
async def reset_tool(
    agent_id: str, tool_id: str, body: dict[str, Any], request: Request, developer: Developer, store: StoreDep
) -> Any:
    await _tool_or_404(store, developer, agent_id, tool_id)
    tool, warnings = _tool_def(body, request)
    return {
        **tool_out(await store.update(TOOLS, developer, tool_id, _tool_values(tool))),
        "warnings": warnings,
    }


@router.patch("/agents/{agent_id}/tools/{tool_id}", response_model=schemas.Tool)
async def patch_tool(
    agent_id: str, tool_id: str, body: dict[str, Any], request: Request, developer: Developer, store: StoreDep
) -> Any:
    current = await _tool_or_404(store, developer, agent_id, tool_id)
    tool, warnings = _tool_def(_deep_merge(current["spec"], body), request)
    return {
        **tool_out(await store.update(TOOLS, developer, tool_id, _tool_values(tool))),
        "warnings": warnings,
    }


@router.delete("/agents/{agent_id}/tools/{tool_id}", response_model=schemas.ResourceDeleted)
async def delete_tool(agent_id: str, tool_id: str, developer: Developer, store: StoreDep) -> Any:
    await _tool_or_404(store, developer, agent_id, tool_id)
    await store.delete(TOOLS, developer, tool_id)
    return {"id": tool_id, "deleted_at": datetime.now(UTC)}


# Helpers -----------------------------------------------------------------------------------------------------


async def agent_or_404(store: StoreDep, developer: str, agent_id: str) -> dict[str, Any]:
    agent = await store.get(AGENTS, developer, checked_id(agent_id, "agent"))
    if agent is None:
        raise not_found("agent", agent_id)
    return agent


async def _tool_or_404(store: StoreDep, developer: str, agent_id: str, tool_id: str) -> dict[str, Any]:
    tool = await store.get(TOOLS, developer, checked_id(tool_id, "tool"))
    if tool is None or tool["agent_id"] != checked_id(agent_id, "agent"):
        raise not_found("tool", tool_id)
    return tool


def _tool_def(body: dict[str, Any], request: Request) -> tuple[ToolDef, list[dict[str, str]]]:
    """The tool, and the warnings for the keys it carried that Julep v1 ignored (ignored here too)."""
    known = {name for name in ToolDef.model_fields} | {
        f.alias for f in ToolDef.model_fields.values() if f.alias
    }
    unknown = sorted(key for key in body if key not in known)
    if unknown:  # ignored, as Julep ignores them, and said (the answer's warnings and Warning header)
        note_ignored("a tool", unknown, sorted(known))
        body = {key: value for key, value in body.items() if key in known}
    try:
        tool = ToolDef.model_validate(body)
    except ValidationError as exc:
        raise _invalid_tool(plain_problems(exc.errors(), root=ToolDef)) from None
    problems = tool_timeout_problems(tool, "", request.app.state.settings.max_tool_timeout)
    refused, ignored = ignored_keys.api_call_keys(tool.api_call, "")
    if problems + refused:
        raise _invalid_tool(problems + refused)
    said = [{"path": key, "message": "unknown key, ignored as Julep v1 ignored it"} for key in unknown[:20]]
    return tool, said + [{"path": w.path, "message": w.message} for w in capped_warnings(ignored)]


def _invalid_tool(problems: list[Problem]) -> ApiError:
    return ApiError(422, "invalid tool: " + "; ".join(f"{p.path}: {p.message}" for p in problems), problems)


def _tool_values(tool: ToolDef) -> dict[str, Any]:
    spec = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {"name": tool.name, "type": tool.type, "description": tool.description, "spec": spec}


def tool_out(row: dict[str, Any] | None) -> dict[str, Any]:
    assert row is not None
    return {**row["spec"], "id": row["id"], "created_at": row["created_at"], "updated_at": row["updated_at"]}


def _deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in patch.items():
        merged[key] = (
            _deep_merge(merged[key], value)
            if isinstance(value, dict) and isinstance(merged.get(key), dict)
            else value
        )
    return merged


def _agent_values(body: schemas.AgentCreate, replace: bool = False) -> dict[str, Any]:
    values = _with_guardrails(body, body.model_dump(exclude_unset=not replace))
    values["metadata"] = values.get("metadata") or {}
    if values.get("canonical_name") is None:
        values.pop("canonical_name", None)  # an update that names none keeps the agent's
    return values


def _named(values: dict[str, Any]) -> dict[str, Any]:
    """A new agent's values with a canonical name: as on Julep, one is made when none is given (an identifier
    from its name, and a random suffix)."""
    if values.get("canonical_name"):
        return values
    return {**values, "canonical_name": canonical_name(values.get("name"), "agent")}


async def _checked(
    store: Store,
    developer: str,
    values: dict[str, Any],
    agent_id: str | None = None,
    project: str | None = None,
) -> dict[str, Any]:
    """The values with their handoffs checked to be the developer's own other agents (null is none), and
    the project they name checked to exist (Julep's 404). Naming none, the agent goes into `project` if given
    (Julep's create-or-update puts it in `default`) and otherwise stays where it is (a new one in none, as
    Julep's POST /agents leaves it)."""
    if "handoffs" in values:
        values["handoffs"] = await checked_handoffs(store, developer, values["handoffs"] or [], agent_id)
    named = values.pop("project", None) or project
    if named:
        values["project"] = await project_or_404(store, developer, named)
    return values


def _with_guardrails(body: schemas.AgentCreate, values: dict[str, Any]) -> dict[str, Any]:
    """The agent's guardrails as stored (as written, unset fields left out), once their expressions and
    templates are checked; a 422 names each problem's path."""
    if body.guardrails is None:
        return values
    problems = guardrail_problems(body.guardrails, "body.guardrails")
    if problems:
        summary = "; ".join(f"{p.path}: {p.message}" for p in problems[:5])
        raise ApiError(422, f"invalid guardrails: {summary}", problems)
    return {**values, "guardrails": body.guardrails.dump()}
