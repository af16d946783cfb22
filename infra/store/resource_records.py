"""The rows of agents, users, sessions and tools read into the records the Store answers
(contracts/records/), with the column readers of infra/store/rows.py."""

from __future__ import annotations

from contracts.records.agents import Agent
from contracts.records.sessions import Session
from contracts.records.tools import Tool
from contracts.records.users import User
from infra.store.rows import (
    Row,
    integer,
    json_object,
    json_value,
    moment,
    optional_object,
    optional_text,
    text,
)


def agent_of(row: Row) -> Agent:
    return Agent(
        id=text(row, "id"),
        name=text(row, "name"),
        canonical_name=optional_text(row, "canonical_name"),
        about=optional_text(row, "about"),
        model=optional_text(row, "model"),
        instructions=json_value(row, "instructions"),
        default_settings=optional_object(row, "default_settings"),
        default_system_template=optional_text(row, "default_system_template"),
        project=optional_text(row, "project"),
        metadata=json_object(row, "metadata"),
        handoffs=_ids(row, "handoffs"),
        guardrails=optional_object(row, "guardrails"),
        created_at=moment(row, "created_at"),
        updated_at=moment(row, "updated_at"),
    )


def user_of(row: Row) -> User:
    return User(
        id=text(row, "id"),
        name=optional_text(row, "name"),
        about=optional_text(row, "about"),
        project=optional_text(row, "project"),
        metadata=json_object(row, "metadata"),
        created_at=moment(row, "created_at"),
        updated_at=moment(row, "updated_at"),
    )


def session_of(row: Row) -> Session:
    return Session(
        id=text(row, "id"),
        agents=_ids(row, "agents"),
        users=_ids(row, "users"),
        situation=optional_text(row, "situation"),
        system_template=optional_text(row, "system_template"),
        token_budget=None if row.get("token_budget") is None else integer(row, "token_budget"),
        context_overflow=optional_text(row, "context_overflow"),
        render_templates=_flag(row, "render_templates"),
        recall_options=optional_object(row, "recall_options"),
        auto_run_tools=_flag(row, "auto_run_tools"),
        forward_tool_calls=_flag(row, "forward_tool_calls"),
        summary=optional_text(row, "summary"),
        settings=optional_object(row, "settings"),
        metadata=json_object(row, "metadata"),
        budget=optional_object(row, "budget"),
        created_at=moment(row, "created_at"),
        updated_at=moment(row, "updated_at"),
    )


def tool_of(row: Row) -> Tool:
    return Tool(
        id=text(row, "id"),
        agent_id=text(row, "agent_id"),
        name=text(row, "name"),
        type=text(row, "type"),
        description=optional_text(row, "description"),
        spec=json_object(row, "spec"),
        created_at=moment(row, "created_at"),
        updated_at=moment(row, "updated_at"),
    )


def _flag(row: Row, key: str) -> bool:
    value = row[key]
    if not isinstance(value, bool):
        raise TypeError(f"stored {key} is {type(value).__name__}, not a bool")
    return value


def _ids(row: Row, key: str) -> list[str]:
    """A JSON list of ids (absent or null: none)."""
    value = row.get(key) or []
    if not isinstance(value, list):
        raise TypeError(f"stored {key} is {type(value).__name__}, not a list")
    return [str(id_) for id_ in value]
