"""Schedules of a task, on Temporal Schedules (services/schedules/)."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Request

from api.deps import ClientsDep, Developer, PageDep
from api.errors import ERROR_RESPONSES
from api.schemas.common import ItemList, ResourceDeleted
from api.schemas.schedules import Schedule, ScheduleCreate, SchedulePatch
from services.schedules import manage
from services.schedules.manage import Schedule as ScheduleRecord

router = APIRouter(tags=["schedules"], responses=ERROR_RESPONSES)


@router.post("/tasks/{task_id}/schedules", status_code=201, response_model=Schedule)
async def create_schedule(
    task_id: str, body: ScheduleCreate, request: Request, developer: Developer, clients: ClientsDep
) -> ScheduleRecord:
    """A schedule that starts an execution of the task at each firing (`metadata.schedule_id` says which)."""
    settings = request.app.state.settings
    return await manage.create_schedule(clients, settings, developer, task_id, body.spec(), body.paused)


@router.get("/tasks/{task_id}/schedules", response_model=ItemList[Schedule])
async def list_schedules(
    task_id: str, developer: Developer, clients: ClientsDep, page: PageDep
) -> dict[str, list[ScheduleRecord]]:
    return {"items": await manage.task_schedules(clients, developer, task_id, page)}


@router.get("/schedules/{schedule_id}", response_model=Schedule)
async def get_schedule(schedule_id: str, developer: Developer, clients: ClientsDep) -> ScheduleRecord:
    return await manage.get_schedule(clients, developer, schedule_id)


@router.patch("/schedules/{schedule_id}", response_model=Schedule)
async def change_schedule(
    schedule_id: str, body: SchedulePatch, request: Request, developer: Developer, clients: ClientsDep
) -> ScheduleRecord:
    """`{"paused": true}` pauses (no run starts once it has answered), `{"paused": false}` resumes;
    `{"task_version": "latest"}` unpins the task's version."""
    settings = request.app.state.settings
    return await manage.change_schedule(clients, settings, developer, schedule_id, body.change())


@router.post("/schedules/{schedule_id}/trigger", status_code=202, response_model=Schedule)
async def trigger_schedule(
    schedule_id: str, request: Request, developer: Developer, clients: ClientsDep
) -> ScheduleRecord:
    """One run now, paused or not, whatever runs are in flight (its execution appears shortly)."""
    settings = request.app.state.settings
    return await manage.trigger_schedule(clients, settings, developer, schedule_id)


@router.delete("/schedules/{schedule_id}", status_code=202, response_model=ResourceDeleted)
async def delete_schedule(schedule_id: str, developer: Developer, clients: ClientsDep) -> ResourceDeleted:
    """Gone from Temporal and from Mint; the executions it started go on."""
    await manage.delete_schedule(clients, developer, schedule_id)
    return ResourceDeleted(id=schedule_id, deleted_at=datetime.now(UTC))
