"""Tasks: created from JSON or YAML, validated, versioned."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import yaml
from fastapi import APIRouter, Request

from api import schemas
from api.deps import ClientsDep, Developer, PageDep
from api.errors import ERROR_RESPONSES, ApiError
from api.request_check import reject, reject_unstorable, too_deep_error
from api.warning_header import note
from expressions.data import bounded_size
from services import agents, tasks
from services.clients import Clients
from services.ids import checked_id
from workflows.storable import too_deep, yaml_depth_loc
from workflows.validate import TaskLimits

router = APIRouter(tags=["tasks"], responses=ERROR_RESPONSES)
# libyaml's safe loader: several times faster than PyYAML's, which also recurses (a deep document was a
# RecursionError, with no path).
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

TASK_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"type": "object", "required": ["name", "main"]}},
            "application/yaml": {"schema": {"type": "string"}},
        },
    }
}


@router.post(
    "/agents/{agent_id}/tasks", status_code=201, response_model=schemas.Task, openapi_extra=TASK_BODY
)
async def create_task(
    agent_id: str, request: Request, developer: Developer, clients: ClientsDep
) -> dict[str, object]:
    return await _save(agent_id, None, request, developer, clients)


@router.post(
    "/agents/{agent_id}/tasks/{task_id}",
    status_code=201,
    response_model=schemas.Task,
    openapi_extra=TASK_BODY,
)
async def create_or_update_task(
    agent_id: str, task_id: str, request: Request, developer: Developer, clients: ClientsDep
) -> dict[str, object]:
    """Create the task with this id, or update it: a new version, unless the document equals the latest."""
    return await _save(agent_id, checked_id(task_id, "task"), request, developer, clients)


@router.get("/agents/{agent_id}/tasks", response_model=schemas.ItemList[schemas.Task])
async def list_tasks(
    agent_id: str, developer: Developer, clients: ClientsDep, page: PageDep
) -> dict[str, list[dict[str, object]]]:
    agent = await agents.get(clients, developer, agent_id)
    return {"items": [t.as_julep() for t in await tasks.find(clients, developer, agent.id, page)]}


@router.get("/tasks/{task_id}", response_model=schemas.Task)
async def get_task(task_id: str, developer: Developer, clients: ClientsDep) -> dict[str, object]:
    return (await tasks.get(clients, developer, task_id)).as_julep()


@router.put("/tasks/{task_id}", response_model=schemas.Task, openapi_extra=TASK_BODY)
async def update_task(
    task_id: str, request: Request, developer: Developer, clients: ClientsDep
) -> dict[str, object]:
    """Replace a task's definition (a new version, unless it equals the latest; executions keep the version
    they started with)."""
    task = await tasks.get(clients, developer, task_id)
    return await _save(task.agent_id, task.id, request, developer, clients)


@router.delete("/tasks/{task_id}", status_code=202, response_model=schemas.ResourceDeleted)
async def delete_task(task_id: str, developer: Developer, clients: ClientsDep) -> schemas.ResourceDeleted:
    """Delete a task and its finished executions; 409 while one is unfinished."""
    await tasks.delete(clients, developer, task_id)
    return schemas.ResourceDeleted(id=task_id, deleted_at=datetime.now(UTC))


async def _save(
    agent_id: str, task_id: str | None, request: Request, developer: str, clients: Clients
) -> dict[str, object]:
    await agents.get(clients, developer, agent_id)
    document = await read_document(request)
    settings = request.app.state.settings
    limits = TaskLimits(
        max_steps=settings.max_steps,
        max_expression_length=settings.max_expression_length,
        max_tool_timeout=settings.max_tool_timeout,
    )
    saved = await tasks.save(clients, developer, agent_id, task_id, document, limits)
    for warning in saved.warnings:
        note(f"{warning.path}: {warning.message}")
    # Julep's task has no key for them (its extra keys are workflows): in the body only when asked for.
    if request.query_params.get("warnings") not in ("true", "1"):
        return saved.task.as_julep()
    warnings = [schemas.ProblemOut(path=w.path, message=w.message) for w in saved.warnings]
    return {**saved.task.as_julep(), "warnings": warnings}


async def read_document(request: Request) -> object:
    """The request body as JSON, or as YAML when the content type says so (a safe loader), bounded in size
    and depth, its text all storable."""
    limit = request.app.state.settings.max_task_bytes
    body = await request.body()
    _check_task_size(len(body), limit)
    content_type = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    is_yaml = content_type in ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")
    try:
        document: object = _parse_yaml(body) if is_yaml else json.loads(body or b"null")
        bounded_size(document)
    except RecursionError:  # json.loads, on a document nested hundreds of levels deep
        raise too_deep_error(body, what="invalid task") from None
    except (yaml.YAMLError, ValueError) as exc:
        raise ApiError(400, f"cannot parse the task ({content_type}): {exc}") from None
    # Task text reaches Python's parser (expressions), Jinja and Postgres: all of it must be storable text.
    reject_unstorable(document, what="invalid task")
    if is_yaml:  # anchors and aliases can make the document larger than its text
        _check_task_size(len(json.dumps(document, default=str).encode()), limit)
    return document


def _parse_yaml(body: bytes) -> object:
    # Depth first, from the parser's events: libyaml's composer recurses in C and would crash the process.
    if (loc := yaml_depth_loc(body)) is not None:
        reject([too_deep(loc)], what="invalid task")
    loaded: object = yaml.load(body, Loader=YAML_LOADER)  # noqa: S506 - a safe loader
    return loaded


def _check_task_size(size: int, limit: int) -> None:
    if size > limit:
        raise ApiError(
            413, f"the task is {size} bytes; the task size limit is {limit} bytes (MINT_MAX_TASK_BYTES)"
        )
