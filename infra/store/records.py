"""The shapes of the rows the store reads, where a caller reads them by name."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from contracts.json import JsonObject, JsonValue


class TransitionRow(TypedDict):
    """A transition as an execution's trace reads it (Store.all_transitions)."""

    type: str
    output: JsonValue
    current: JsonObject  # where it ran: workflow, step, scope_id
    metadata: JsonObject | None
    created_at: datetime


class QuietExecution(TypedDict):
    """A live execution the reconciler claimed for a check (Store.claim_quiet_executions)."""

    id: str
    developer_id: str
    status: str
