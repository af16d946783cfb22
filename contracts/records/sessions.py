"""A session and the entries of its history as the store answers them (infra/store/resource_records.py and
infra/store/session_history.py read them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.json import JsonObject
from contracts.messages import Message


@dataclass(frozen=True)
class Session:
    id: str
    agents: list[str]
    users: list[str]
    situation: str | None
    system_template: str | None
    token_budget: int | None
    context_overflow: str | None
    render_templates: bool
    recall_options: JsonObject | None
    auto_run_tools: bool
    forward_tool_calls: bool
    summary: str | None
    settings: JsonObject | None
    metadata: JsonObject
    budget: JsonObject | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class HistoryEntry:
    """One entry of a session's history: its message (with only the keys that are set), the tokens it was
    counted as when written, who wrote it (`source`: a chat's request or answer, or compression's
    summarizer), the entries a summarizer entry stands for, and where it sits (`order`)."""

    id: str
    message: Message
    token_count: int
    source: str
    replaces: list[str]
    order: int
    created_at: datetime
