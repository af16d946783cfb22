"""Agents and their tools."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Request
from pydantic import ValidationError

from api import schemas
from api.deps import ClientsDep, Developer, PageDep
from api.errors import ERROR_RESPONSES
from api.warning_header import note_ignored
from contracts.json import JsonObject
from contracts.records.agents import Agent
from contracts.records.tools import Tool
from infra.models.catalog import available_models
from services import agents, tools
from services.tools import invalid_tool
from workflows.language import ToolDef
from workflows.plain_errors import plain_problems

router = APIRouter(tags=["agents"], responses=ERROR_RESPONSES)


@router.get("/agents/models")
async def list_models(developer: Developer, request: Request) -> dict[str, object]:
    """The models this Mint can call (from the providers configured on it)."""
    config = request.app.state.settings.model_config()
    return {"models": [{"id": model} for model in await available_models(config)]}


@router.post("/agents", status_code=201, response_model=schemas.Agent)
async def create_agent(body: schemas.AgentCreate, developer: Developer, clients: ClientsDep) -> Agent:
    return await agents.create(clients, developer, body.change())


@router.get("/agents", response_model=schemas.ItemList[schemas.Agent])
async def list_agents(developer: Developer, clients: ClientsDep, page: PageDep) -> dict[str, list[Agent]]:
    return {"items": await agents.find(clients, developer, page)}


@router.get("/agents/{agent_id}", response_model=schemas.Agent)
async def get_agent(agent_id: str, developer: Developer, clients: ClientsDep) -> Agent:
    return await agents.get(clients, developer, agent_id)


@router.post("/agents/{agent_id}", status_code=201, response_model=schemas.Agent)
async def create_or_update_agent(
    agent_id: str, body: schemas.AgentCreate, developer: Developer, clients: ClientsDep
) -> Agent:
    return await agents.create_or_update(clients, developer, agent_id, body.change(replace=True))


@router.put("/agents/{agent_id}", response_model=schemas.Agent)
async def reset_agent(
    agent_id: str, body: schemas.AgentCreate, developer: Developer, clients: ClientsDep
) -> Agent:
    return await agents.reset(clients, developer, agent_id, body.change(replace=True))


@router.patch("/agents/{agent_id}", response_model=schemas.Agent)
async def patch_agent(
    agent_id: str, body: schemas.AgentPatch, developer: Developer, clients: ClientsDep
) -> Agent:
    return await agents.patch(clients, developer, agent_id, body.change())


@router.delete("/agents/{agent_id}", response_model=schemas.ResourceDeleted, status_code=202)
async def delete_agent(agent_id: str, developer: Developer, clients: ClientsDep) -> schemas.ResourceDeleted:
    await agents.delete(clients, developer, agent_id)
    return schemas.ResourceDeleted(id=agent_id, deleted_at=datetime.now(UTC))


# Tools -------------------------------------------------------------------------------------------------------


@router.post("/agents/{agent_id}/tools", status_code=201, response_model=schemas.Tool)
async def create_tool(
    agent_id: str, body: JsonObject, request: Request, developer: Developer, clients: ClientsDep
) -> dict[str, object]:
    await agents.get(clients, developer, agent_id)
    tool, warnings = _tool_def(body, request)
    return tool_out(await tools.add(clients, developer, agent_id, tool), warnings)


@router.get("/agents/{agent_id}/tools", response_model=schemas.ItemList[schemas.Tool])
async def list_tools(
    agent_id: str, developer: Developer, clients: ClientsDep, page: PageDep
) -> dict[str, list[dict[str, object]]]:
    agent = await agents.get(clients, developer, agent_id)
    return {"items": [tool_out(t) for t in await tools.find(clients, developer, agent.id, page)]}


@router.put("/agents/{agent_id}/tools/{tool_id}", response_model=schemas.Tool)
async def reset_tool(
    agent_id: str,
    tool_id: str,
    body: JsonObject,
    request: Request,
    developer: Developer,
    clients: ClientsDep,
) -> dict[str, object]:
    current = await tools.get(clients, developer, agent_id, tool_id)
    tool, warnings = _tool_def(body, request)
    return tool_out(await tools.replace(clients, developer, current.id, tool), warnings)


@router.patch("/agents/{agent_id}/tools/{tool_id}", response_model=schemas.Tool)
async def patch_tool(
    agent_id: str,
    tool_id: str,
    body: JsonObject,
    request: Request,
    developer: Developer,
    clients: ClientsDep,
) -> dict[str, object]:
    current = await tools.get(clients, developer, agent_id, tool_id)
    tool, warnings = _tool_def(_deep_merge(current.spec, body), request)
    return tool_out(await tools.replace(clients, developer, current.id, tool), warnings)


@router.delete("/agents/{agent_id}/tools/{tool_id}", response_model=schemas.ResourceDeleted)
async def delete_tool(
    agent_id: str, tool_id: str, developer: Developer, clients: ClientsDep
) -> schemas.ResourceDeleted:
    current = await tools.get(clients, developer, agent_id, tool_id)
    await tools.delete(clients, developer, current.id)
    return schemas.ResourceDeleted(id=tool_id, deleted_at=datetime.now(UTC))


def tool_out(tool: Tool, warnings: list[schemas.ProblemOut] | None = None) -> dict[str, object]:
    """A tool as Julep answers it: its definition, with its id and times beside (and, in the answer to a
    create or update, the warnings)."""
    said = {} if warnings is None else {"warnings": warnings}
    return {**tool.spec, "id": tool.id, "created_at": tool.created_at, "updated_at": tool.updated_at, **said}


def _tool_def(body: JsonObject, request: Request) -> tuple[ToolDef, list[schemas.ProblemOut]]:
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
        raise invalid_tool(plain_problems(exc.errors(), root=ToolDef)) from None
    ignored = tools.checked(tool, request.app.state.settings.max_tool_timeout)
    said = [
        schemas.ProblemOut(path=key, message="unknown key, ignored as Julep v1 ignored it")
        for key in unknown[:20]
    ]
    return tool, said + [schemas.ProblemOut(path=w.path, message=w.message) for w in ignored]


def _deep_merge(base: JsonObject, patch: JsonObject) -> JsonObject:
    merged = dict(base)
    for key, value in patch.items():
        current = merged.get(key)
        merged[key] = (
            _deep_merge(current, value) if isinstance(value, dict) and isinstance(current, dict) else value
        )
    return merged
