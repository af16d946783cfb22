"""A user as the store answers it (infra/store/resource_records.py reads it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.json import JsonObject


@dataclass(frozen=True)
class User:
    id: str
    name: str | None
    about: str | None
    project: str | None
    metadata: JsonObject
    created_at: datetime
    updated_at: datetime
