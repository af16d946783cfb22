"""JSON whose shape the user decides: a task's input and output, a tool's arguments, metadata, a step's
value. Typed as what JSON can hold, so mypy checks what code does with it, where `dict[str, Any]` lets
anything through. Values Mint itself gives a shape are records (dataclasses, TypedDicts, pydantic models),
not these."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    JsonValue: TypeAlias = "None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]"
    JsonObject: TypeAlias = "dict[str, JsonValue]"
else:
    # At run time these are what a converter that reads type hints (Temporal's payload converter, pydantic)
    # passes through as it is. The recursive union would not do: Temporal's converter tries a union's members
    # in turn, and `int` before `float` would turn 1.5 into 1.
    JsonValue = Any
    JsonObject = dict
