"""Tasks: created from JSON or YAML, validated, versioned."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import yaml
from fastapi import APIRouter, Request

from api import schemas
from api.deps import Developer, PageDep, StoreDep, checked_id
from api.errors import ERROR_RESPONSES, ApiError, not_found
from api.request_check import reject, reject_unstorable, too_deep_error
from api.routes.agents import agent_or_404
from api.warning_header import note
from expressions.data import bounded_size
from workflows.language import IGNORED_TASK_FIELDS, TASK_FIELDS
from workflows.language.nesting import with_kinds
from workflows.storable import too_deep, yaml_depth_loc
from workflows.validate import TaskInvalid, TaskLimits, validate_task

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
async def create_task(agent_id: str, request: Request, developer: Developer, store: StoreDep) -> Any:
    return await _save(agent_id, None, request, developer, store)


@router.post(
    "/agents/{agent_id}/tasks/{task_id}",
    status_code=201,
    response_model=schemas.Task,
    openapi_extra=TASK_BODY,
)
async def create_or_update_task(
    agent_id: str, task_id: str, request: Request, developer: Developer, store: StoreDep
) -> Any:
    """Create the task with this id, or update it: a new version, unless the document equals the latest."""
    return await _save(agent_id, checked_id(task_id, "task"), request, developer, store)


@router.get("/agents/{agent_id}/tasks", response_model=schemas.ItemList[schemas.Task])
async def list_tasks(agent_id: str, developer: Developer, store: StoreDep, page: PageDep) -> Any:
    agent = await agent_or_404(store, developer, agent_id)
    return {"items": [task_out(t) for t in await store.list_tasks(developer, agent["id"], page)]}


@router.get("/tasks/{task_id}", response_model=schemas.Task)
async def get_task(task_id: str, developer: Developer, store: StoreDep) -> Any:
    return task_out(await _task_or_404(store, developer, task_id))


@router.put("/tasks/{task_id}", response_model=schemas.Task, openapi_extra=TASK_BODY)
async def update_task(task_id: str, request: Request, developer: Developer, store: StoreDep) -> Any:
    """Replace a task's definition (a new version, unless it equals the latest; executions keep the version
    they started with)."""
    task = await _task_or_404(store, developer, task_id)
    return await _save(task["agent_id"], task["id"], request, developer, store)


@router.delete("/tasks/{task_id}", status_code=202, response_model=schemas.ResourceDeleted)
async def delete_task(task_id: str, developer: Developer, store: StoreDep) -> Any:
    """Delete a task and its finished executions; 409 while one is unfinished."""
    if not await store.delete_task(developer, checked_id(task_id, "task")):
        raise not_found("task", task_id)
    return {"id": task_id, "deleted_at": datetime.now(UTC)}


async def _task_or_404(store: StoreDep, developer: str, task_id: str) -> dict[str, Any]:
    task = await store.get_task(developer, checked_id(task_id, "task"))
    if task is None:
        raise not_found("task", task_id)
    return task


async def _save(agent_id: str, task_id: str | None, request: Request, developer: str, store: StoreDep) -> Any:
    agent = await agent_or_404(store, developer, agent_id)
    document = await read_document(request)
    agent_tools = {t["name"] for t in await store.agent_tools(developer, agent["id"])}
    settings = request.app.state.settings
    limits = TaskLimits(
        max_steps=settings.max_steps,
        max_expression_length=settings.max_expression_length,
        max_tool_timeout=settings.max_tool_timeout,
    )
    try:
        valid = validate_task(document, frozenset(agent_tools), limits)
    except TaskInvalid as exc:
        raise ApiError(422, f"invalid task: {exc}", exc.problems) from None
    saved = await store.save_task(developer, agent["id"], task_id, valid.document, valid.dialect)
    for warning in valid.warnings:
        note(f"{warning.path}: {warning.message}")
    # Julep's task has no key for them (its extra keys are workflows): in the body only when asked for.
    if request.query_params.get("warnings") not in ("true", "1"):
        return task_out(saved)
    return {**task_out(saved), "warnings": [{"path": w.path, "message": w.message} for w in valid.warnings]}


async def read_document(request: Request) -> Any:
    """The request body as JSON, or as YAML when the content type says so (a safe loader), bounded in size
    and depth, its text all storable."""
    limit = request.app.state.settings.max_task_bytes
    body = await request.body()
    _check_task_size(len(body), limit)
    content_type = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    is_yaml = content_type in ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")
    try:
        document = _parse_yaml(body) if is_yaml else json.loads(body or b"null")
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


def _parse_yaml(body: bytes) -> Any:
    # Depth first, from the parser's events: libyaml's composer recurses in C and would crash the process.
    if (loc := yaml_depth_loc(body)) is not None:
        reject([too_deep(loc)], what="invalid task")
    return yaml.load(body, Loader=YAML_LOADER)  # noqa: S506 - a safe loader


def _check_task_size(size: int, limit: int) -> None:
    if size > limit:
        raise ApiError(
            413, f"the task is {size} bytes; the task size limit is {limit} bytes (MINT_MAX_TASK_BYTES)"
        )


def _typed(key: str, value: Any) -> Any:
    """A top-level value of a task document, its steps typed where it is a workflow (workflows/language/task.py
    split_task says which are: every key that is no task field, and the members of a `workflows:` mapping)."""
    if key == "workflows" and isinstance(value, dict):
        return {name: with_kinds(steps) for name, steps in value.items()}
    if key == "main" or key not in TASK_FIELDS and key not in IGNORED_TASK_FIELDS:
        return with_kinds(value)
    return value


def task_out(task: dict[str, Any]) -> dict[str, Any]:
    """A task as Julep answers it: its steps typed (`kind_`), and beside them, as Julep's own task rows do,
    the agent and the version."""
    return {
        **{key: _typed(key, value) for key, value in task["document"].items()},
        "id": task["id"],
        "agent_id": task["agent_id"],
        "version": task["version"],
        "created_at": task["created_at"],
        "updated_at": task["updated_at"],
    }
