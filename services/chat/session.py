"""A session as a chat reads it: its record from the store (services/sessions.py get), taken once into what a
chat needs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from contracts.json import JsonObject
from contracts.records.agents import Agent
from contracts.records.sessions import Session
from contracts.records.users import User


@dataclass(frozen=True)
class ChatSession:
    """Who takes part (agent and user ids, in order), how its context is built (system template, situation,
    token budget and overflow policy, recall options), whether Mint runs server-side tools, its metadata and
    settings, and whether it sets a budget of its own. `view` is the session as the system template reads it."""

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
    def of(cls, session: Session) -> ChatSession:
        """The session from its record."""
        return cls(
            id=session.id,
            agents=tuple(session.agents),
            users=tuple(session.users),
            situation=session.situation,
            system_template=session.system_template,
            render_templates=session.render_templates,
            token_budget=session.token_budget,
            context_overflow=session.context_overflow,
            recall_options=session.recall_options,
            auto_run_tools=session.auto_run_tools,
            metadata=session.metadata,
            settings=session.settings,
            has_budget=bool(session.budget),
            view=template_view(session),
        )


def template_view(record: Agent | User | Session) -> dict[str, object]:
    """A record as the session's system template reads it: its fields by name, as stored."""
    return {f.name: getattr(record, f.name) for f in fields(record)}
