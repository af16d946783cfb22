"""Secrets, the developer's or one agent's: what a write gives the store, and what it shows of one (a mask,
never the value)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.json import JsonObject


@dataclass(frozen=True)
class SecretFields:
    """A secret as created or replaced: `value` is sealed before it is stored."""

    name: str
    value: str
    description: str | None
    metadata: JsonObject | None


@dataclass(frozen=True)
class Secret:
    id: str
    name: str
    value: str  # always the mask
    description: str | None
    metadata: JsonObject
    created_at: datetime
    updated_at: datetime
