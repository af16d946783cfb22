"""A task's input_schema: the seed's shorthand, checks at task creation, and validation of inputs.

Patterns run on RE2 (linear time), so a tenant's `pattern` cannot stall the API with a catastrophic regex.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema
import jsonschema.validators
import re2
import referencing

from contracts.json import JsonObject, JsonValue
from workflows.problems import Problem


def _pattern(
    validator: object, pattern: str, instance: object, schema: object
) -> Iterator[jsonschema.ValidationError]:
    if isinstance(instance, str) and not re2.search(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, object], instance: object, schema: object
) -> Iterator[jsonschema.ValidationError]:
    if not isinstance(instance, dict):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if re2.search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"pattern": _pattern, "patternProperties": _pattern_properties}
)

# A keyword counts as JSON Schema only when its value has the keyword's shape; otherwise the key is a
# property name in the seed's shorthand (`{type: {type: string}}` is a property called "type").
_KEYWORD_SHAPES: dict[str, tuple[type, ...]] = {
    "type": (str, list), "properties": (dict,), "required": (list,), "$schema": (str,), "$ref": (str,),
    "$defs": (dict,), "anyOf": (list,), "oneOf": (list,), "allOf": (list,), "enum": (list,),
    "items": (dict, bool), "not": (dict,), "additionalProperties": (dict, bool), "description": (str,),
    "title": (str,),
}  # fmt: skip


def normalize_input_schema(schema: JsonObject | None) -> JsonObject | None:
    """The seed's shorthand (a bare map of property schemas) means an object with those properties."""
    if not schema:
        return None
    if any(_is_keyword(key, value) for key, value in schema.items()):
        return schema
    return {"type": "object", "properties": schema}


def _is_keyword(key: str, value: JsonValue) -> bool:
    shapes = _KEYWORD_SHAPES.get(key)
    if shapes is None or not isinstance(value, shapes):
        return False
    if key == "properties" and isinstance(value, dict):  # property schemas, not a property "properties"
        return all(isinstance(v, dict | bool) for v in value.values())
    return True


def schema_problems(schema: JsonObject | None, path: str = "input_schema") -> list[Problem]:
    """Problems with a schema at task creation (the input_schema, or a wait's at `path`): invalid JSON
    Schema, or `$ref`s that go nowhere."""
    normalized = normalize_input_schema(schema)
    if normalized is None:
        return []
    try:
        Validator.check_schema(normalized)
    except jsonschema.SchemaError as exc:
        where = ".".join(str(p) for p in exc.path)
        return [Problem(f"{path}{'.' + where if where else ''}", exc.message)]
    problems = [Problem(path, message) for message in _unresolvable_refs(normalized, normalized)]
    for pattern in _patterns(normalized):
        try:
            re2.compile(pattern)
        except Exception as exc:  # re2.error: RE2 has no backreferences or lookarounds
            problems.append(Problem(path, f"pattern {pattern!r} is not valid RE2 syntax: {exc}"))
    return problems


def _patterns(node: JsonValue) -> list[str]:
    if isinstance(node, list):
        return [p for item in node for p in _patterns(item)]
    if not isinstance(node, dict):
        return []
    found = [p for value in node.values() for p in _patterns(value)]
    pattern, by_key = node.get("pattern"), node.get("patternProperties")
    if isinstance(pattern, str):
        found.append(pattern)
    if isinstance(by_key, dict):
        found += list(by_key)
    return found


def _unresolvable_refs(node: JsonValue, root: JsonObject) -> list[str]:
    """Only local `$ref`s (`#/...`) that point at something in the schema itself are allowed."""
    if isinstance(node, list):
        return [m for item in node for m in _unresolvable_refs(item, root)]
    if not isinstance(node, dict):
        return []
    problems = [m for value in node.values() for m in _unresolvable_refs(value, root)]
    for ref in (node.get("$ref"), node.get("$dynamicRef")):
        problems += _ref_problems(ref, root)
    return problems


def _ref_problems(ref: JsonValue, root: JsonObject) -> list[str]:
    problems: list[str] = []
    if isinstance(ref, str):
        if not ref.startswith("#"):
            problems.append(f"$ref {ref!r}: only references inside the schema (#/...) are allowed")
        elif not _pointer_exists(root, ref[1:]):
            problems.append(f"$ref {ref!r} points at nothing in the schema")
    return problems


def _pointer_exists(root: JsonObject, pointer: str) -> bool:
    target: JsonValue = root
    for raw in [p for p in pointer.split("/") if p]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return False
    return True


def input_problems(schema: JsonObject | None, value: JsonValue) -> list[Problem]:
    """Check an execution's input against the task's input_schema."""
    normalized = normalize_input_schema(schema)
    if normalized is None:
        return []
    try:
        errors = sorted(
            # An empty registry: a reference the creation-time checks missed fails here, never fetched.
            Validator(normalized, registry=referencing.Registry()).iter_errors(value),
            key=lambda e: list(map(str, e.absolute_path)),
        )
    except Exception as exc:  # a schema that cannot be applied (its creation-time checks missed it)
        return [Problem("input_schema", f"the task's input_schema cannot be applied: {exc}")]
    return [Problem("input" + "".join(f"[{p!r}]" for p in err.absolute_path), err.message) for err in errors]
