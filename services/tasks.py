"""Tasks: validated, saved as versions of the agent's task, read as Julep answers them, deleted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.json import JsonObject
from contracts.records.pages import Page
from contracts.records.tasks import TaskVersion
from infra.store.schedules import ScheduleStore
from services.clients import Clients
from services.errors import Invalid, NotFound
from services.ids import checked_id
from services.schedules.temporal import delete_all as delete_schedules
from workflows.language import IGNORED_TASK_FIELDS, TASK_FIELDS
from workflows.language.nesting import with_kinds
from workflows.problems import Problem
from workflows.validate import TaskInvalid, TaskLimits, validate_task


@dataclass(frozen=True)
class Task:
    id: str
    agent_id: str
    version: int
    document: JsonObject  # as written (validated)
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, stored: TaskVersion) -> Task:
        return cls(
            id=stored.id,
            agent_id=stored.agent_id,
            version=stored.version,
            document=stored.document,
            created_at=stored.created_at,
            updated_at=stored.updated_at,
        )

    def as_julep(self) -> dict[str, object]:
        """A task as Julep answers it: its steps typed (`kind_`), and beside them, as Julep's own task rows
        do, the agent and the version."""
        return {
            **{key: _typed(key, value) for key, value in self.document.items()},
            "id": self.id,
            "agent_id": self.agent_id,
            "version": self.version,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


@dataclass(frozen=True)
class Saved:
    task: Task
    warnings: list[Problem]  # how each string that could be read either way was read, with its path


async def save(
    clients: Clients,
    developer: str,
    agent_id: str,
    task_id: str | None,
    document: object,
    limits: TaskLimits,
) -> Saved:
    """The document (as parsed: YAML may hold more than JSON) checked against the agent's tools and the
    limits, and saved: a new task, or a new
    version of `task_id` (unless it equals the latest). The agent is known to be the developer's."""
    agent_id = checked_id(agent_id, "agent")
    agent_tools = {t.name for t in await clients.store.agent_tools(developer, agent_id)}
    try:
        valid = validate_task(document, frozenset(agent_tools), limits)
    except TaskInvalid as exc:
        raise Invalid(f"invalid task: {exc}", problems=exc.problems) from None
    saved = await clients.store.save_task(developer, agent_id, task_id, valid.document, valid.dialect)
    return Saved(Task.of(saved), valid.warnings)


async def find(clients: Clients, developer: str, agent_id: str, page: Page) -> list[Task]:
    return [Task.of(row) for row in await clients.store.list_tasks(developer, agent_id, page)]


async def get(clients: Clients, developer: str, task_id: str) -> Task:
    task = await clients.store.get_task(developer, checked_id(task_id, "task"))
    if task is None:
        raise NotFound("task", task_id)
    return Task.of(task)


async def delete(clients: Clients, developer: str, task_id: str) -> None:
    """A task gone with its finished executions and its schedules; Conflict while one is unfinished."""
    schedules = await ScheduleStore(clients.store.pool).ids_for_task(developer, checked_id(task_id, "task"))
    if not await clients.store.delete_task(developer, checked_id(task_id, "task")):
        raise NotFound("task", task_id)
    await delete_schedules(clients.temporal, schedules)


def _typed(key: str, value: object) -> object:
    """A top-level value of a task document, its steps typed where it is a workflow (workflows/language/task.py
    split_task says which are: every key that is no task field, and the members of a `workflows:` mapping)."""
    if key == "workflows" and isinstance(value, dict):
        return {name: with_kinds(steps) for name, steps in value.items()}
    if key == "main" or key not in TASK_FIELDS and key not in IGNORED_TASK_FIELDS:
        return with_kinds(value)
    return value
