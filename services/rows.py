"""A JSON object as the API parsed it, read as JSON (the readers of a stored row's columns are the store's:
infra/store/rows.py)."""

from __future__ import annotations

from collections.abc import Mapping

from contracts.json import JsonObject
from infra.store.rows import json_value


def json_fields(value: Mapping[str, object]) -> JsonObject:
    """A JSON object as the API parsed it (its values typed `object`), as JSON: checked at its top level."""
    return {key: json_value(value, key) for key in value}
