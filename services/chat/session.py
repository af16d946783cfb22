"""A session as a chat reads it: its row from the store (services/sessions.py session_row), taken once into a
frozen record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contracts.json import JsonObject


@dataclass(frozen=True)
class ChatSession:
    """Who takes part (agent and user ids, in order), how its context is built (system template, situation,
    token budget and overflow policy, recall options), whether Mint runs server-side tools, its metadata and
    settings, and whether it sets a budget of its own. `view` is the row, as the system template reads it."""

    id: str
    agents: tuple[str, ...]
    users: tuple[str, ...] = ()
    situation: str | None = None
    system_template: str | None = None
    render_templates: bool = True
    token_budget: int | None = None
    context_overflow: str | None = None
    recall_options: JsonObject | None = None
    auto_run_tools: bool = False
    metadata: JsonObject | None = None
    settings: JsonObject | None = None
    has_budget: bool = False
    view: Mapping[str, object] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, row: dict[str, Any]) -> ChatSession:
        """The session from its store row."""
        return cls(
            id=str(row["id"]),
            agents=tuple(map(str, row["agents"])),
            users=tuple(map(str, row.get("users") or ())),
            situation=row.get("situation"),
            system_template=row.get("system_template"),
            render_templates=bool(row.get("render_templates", True)),
            token_budget=row.get("token_budget"),
            context_overflow=row.get("context_overflow"),
            recall_options=row.get("recall_options"),
            auto_run_tools=bool(row.get("auto_run_tools")),
            metadata=row.get("metadata"),
            settings=row.get("settings"),
            has_budget=bool(row.get("budget")),
            view=row,
        )
