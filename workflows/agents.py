"""An agent as an execution (or a chat) knows it: read once from the JSON it travels as (ExecutionParams.agent
and handoff_agents, services/handoffs.py AGENT_VIEW_KEYS) into a frozen record. Its expressions still read
the JSON as it came (`agent`): that is the user's view of it."""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts.json import JsonObject, JsonValue


@dataclass(frozen=True)
class Agent:
    """Who answers: its id and name, what it is about, its model and instructions, its metadata and default
    settings, the agents it may hand off to (by id), and, for an agent a step may be handed to, its own
    tools (as stored) and guardrails (as stored)."""

    id: str | None = None
    name: str | None = None
    about: str | None = None
    model: str | None = None
    instructions: str | tuple[str, ...] | None = None
    metadata: JsonObject | None = None
    default_settings: JsonObject | None = None
    handoffs: tuple[str, ...] = ()
    tools: tuple[JsonObject, ...] = ()
    guardrails: JsonObject | None = None
    view: JsonObject = field(default_factory=dict, compare=False)  # as it came: what expressions read

    @classmethod
    def of(cls, raw: JsonObject) -> Agent:
        """The agent from its JSON (services/handoffs.py agent_view makes it); a key of the wrong type reads as
        unset."""
        instructions = raw.get("instructions")
        return cls(
            id=_text(raw.get("id")),
            name=_text(raw.get("name")),
            about=_text(raw.get("about")),
            model=_text(raw.get("model")),
            instructions=tuple(map(str, instructions))
            if isinstance(instructions, list)
            else _text(instructions),
            metadata=_object(raw.get("metadata")),
            default_settings=_object(raw.get("default_settings")),
            handoffs=tuple(i for i in _list(raw.get("handoffs")) if isinstance(i, str)),
            tools=tuple(t for t in _list(raw.get("tools")) if isinstance(t, dict)),
            guardrails=_object(raw.get("guardrails")),
            view=raw,
        )

    @property
    def label(self) -> str:
        """How the model is told of it: its name, else its id."""
        return self.name or str(self.id)

    def setting(self, key: str) -> JsonValue:
        """One of its default settings (None when unset)."""
        return (self.default_settings or {}).get(key)


def _text(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None


def _object(value: JsonValue) -> JsonObject | None:
    return value if isinstance(value, dict) else None


def _list(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else []
