"""A task as the store answers it: one version of its document (infra/store/tasks.py reads it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.json import JsonObject


@dataclass(frozen=True)
class TaskVersion:
    """A version of a task: its document as validated, the dialect its expressions are in, and the agent that
    runs it. `created_at` and `updated_at` are the task's (its first version's, its latest version's)."""

    id: str
    version: int
    agent_id: str
    dialect: str
    document: JsonObject
    created_at: datetime
    updated_at: datetime
