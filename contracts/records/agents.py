"""An agent as the store answers it (infra/store/resource_records.py reads it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.json import JsonObject, JsonValue


@dataclass(frozen=True)
class Agent:
    id: str
    name: str
    canonical_name: str | None
    about: str | None
    model: str | None
    instructions: JsonValue  # a string or a list of them, as written
    default_settings: JsonObject | None
    default_system_template: str | None
    project: str | None
    metadata: JsonObject
    handoffs: list[str]  # ids of the agents it may hand a conversation to
    guardrails: JsonObject | None  # as stored
    created_at: datetime
    updated_at: datetime
