"""Projects: a developer's named groups of agents, users and files (Julep v1's)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.json import JsonObject


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    canonical_name: str  # unique per developer, whatever its case
    metadata: JsonObject
    created_at: datetime
    updated_at: datetime
