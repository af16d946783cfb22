"""A JSON object as the API parsed it, read as JSON (a stored row's columns are read in infra/store/)."""

from __future__ import annotations

from collections.abc import Mapping

from contracts.json import JsonObject


def json_fields(value: Mapping[str, object]) -> JsonObject:
    """A JSON object as the API parsed it (its values typed `object`), as JSON: checked at its top level, as
    JSON parsed is JSON throughout."""
    found: JsonObject = {}
    for key, item in value.items():
        if item is not None and not isinstance(item, bool | int | float | str | list | dict):
            raise TypeError(f"{key} is {type(item).__name__}, not JSON")
        found[key] = item
    return found
