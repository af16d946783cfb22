"""JSON whose shape the user decides: a task's input and output, a tool's arguments, metadata, a step's
value. Typed as what JSON can hold, so mypy checks what code does with it, where `dict[str, Any]` lets
anything through. Values Mint itself gives a shape are records (dataclasses, TypedDicts, pydantic models),
not these."""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = "None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]"
JsonObject: TypeAlias = "dict[str, JsonValue]"
