"""An agent's tool as the store answers it (infra/store/resource_records.py reads it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.json import JsonObject


@dataclass(frozen=True)
class Tool:
    id: str
    agent_id: str
    name: str
    type: str
    description: str | None
    spec: JsonObject  # the task-language definition as written
    created_at: datetime
    updated_at: datetime
