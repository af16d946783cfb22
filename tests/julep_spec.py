"""Julep v1's OpenAPI spec (tests/fixtures/julep/) read as test data: its operations, the smallest valid value
of a schema, and where the top level of an answer differs from a schema. Used by tests/test_julep_spec.py."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

SPEC_PATH = Path(__file__).parent / "fixtures" / "julep" / "openapi-1.0.0.yaml"
METHODS = ("get", "post", "put", "patch", "delete")
# A string the spec's patterns (identifiers, canonical names) and lengths all accept.
STRING = "spec_value"
FORMATS = {"uuid": "00000000-0000-4000-8000-000000000000", "date-time": "2025-01-01T00:00:00Z"}


def json_type(value: Any) -> str:
    """The JSON type of a parsed JSON value (a bool is not an integer)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for kind, name in ((int, "integer"), (float, "number"), (str, "string"), (list, "array")):
        if isinstance(value, kind):
            return name
    return "object"


@dataclass(frozen=True)
class Operation:
    """One method on one path of the spec."""

    method: str  # upper case
    path: str
    spec: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def success(self) -> int:
        return int(next(code for code in self.spec["responses"] if code.startswith("2")))

    @property
    def creates_at_id(self) -> bool:
        """A create-or-update: its last path parameter is the id of what it creates."""
        return self.spec.get("operationId", "").endswith("_createOrUpdate")

    def response(self) -> tuple[str, dict[str, Any]]:
        """The success answer's content type (JSON if the spec offers it) and schema."""
        content = self.spec["responses"][str(self.success)].get("content", {})
        kind = "application/json" if "application/json" in content else next(iter(content), "")
        return kind, content.get(kind, {}).get("schema", {})

    def request_schema(self) -> dict[str, Any] | None:
        """The JSON request body's schema, or None for an operation without a body."""
        body = self.spec.get("requestBody")
        return body["content"]["application/json"]["schema"] if body else None


class Spec:
    def __init__(self, path: Path = SPEC_PATH):
        self.text = path.read_bytes()
        self.document: dict[str, Any] = yaml.safe_load(self.text)

    @cached_property
    def operations(self) -> list[Operation]:
        return [
            Operation(method.upper(), path, op)
            for path, ops in self.document["paths"].items()
            for method, op in ops.items()
            if method in METHODS
        ]

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        """`node` with every $ref at its top followed (`#/components/...` only: the spec has no other)."""
        while "$ref" in node:
            found: Any = self.document
            for part in node["$ref"].removeprefix("#/").split("/"):
                found = found[part]
            node = found
        return node

    def schema(self, name: str) -> dict[str, Any]:
        return self.document["components"]["schemas"][name]

    def required_query(self, op: Operation) -> dict[str, str]:
        """The query parameters the spec requires, each at its default (objects as JSON), but those whose
        default is null (a query string has no null)."""
        found = {}
        for parameter in map(self.resolve, op.spec.get("parameters", [])):
            if parameter["in"] == "query" and parameter.get("required"):
                value = self.minimal(parameter["schema"])
                if value is not None:
                    found[parameter["name"]] = value if isinstance(value, str) else json.dumps(value)
        return found

    def object_parts(self, schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """An object schema's properties and required names, its allOf branches' merged in."""
        schema = self.resolve(schema)
        properties, required = dict(schema.get("properties", {})), list(schema.get("required", []))
        for branch in schema.get("allOf", []):
            more, needed = self.object_parts(branch)
            properties.update(more)
            required += [name for name in needed if name not in required]
        return properties, required

    def minimal(self, schema: dict[str, Any]) -> Any:
        """The smallest value `schema` accepts: the default where there is one (TypeSpec marks defaulted fields
        required), else the first enum value or branch, only the required keys of an object, no items."""
        if "default" not in schema:  # a default beside a $ref is the one meant
            schema = self.resolve(schema)
        if "default" in schema:
            return copy.deepcopy(schema["default"])
        if "enum" in schema:
            return schema["enum"][0]
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self.minimal(schema[key][0])
        if "allOf" in schema and "properties" not in schema and len(schema["allOf"]) == 1:
            return self.minimal(schema["allOf"][0])
        kind = schema.get("type", "object" if "properties" in schema or "allOf" in schema else None)
        if kind == "object":
            properties, required = self.object_parts(schema)
            return {name: self.minimal(properties.get(name, {})) for name in required}
        if kind == "array":
            return [self.minimal(schema.get("items", {})) for _ in range(schema.get("minItems", 0))]
        if kind == "string":
            return FORMATS.get(schema.get("format", ""), STRING)
        if kind in ("integer", "number"):
            return schema.get("minimum", 1)
        return False if kind == "boolean" else None

    def json_types(self, schema: dict[str, Any]) -> set[str] | None:
        """The JSON types `schema` allows, any branch of anyOf/oneOf/allOf counting; None if it says none."""
        schema = self.resolve(schema)
        types = {"null"} if schema.get("nullable") else set()
        if "type" in schema:
            types |= {schema["type"], "integer"} if schema["type"] == "number" else {schema["type"]}
        elif "enum" in schema:
            types |= {json_type(value) for value in schema["enum"]}
        elif "properties" in schema:
            types.add("object")
        for key in ("anyOf", "oneOf", "allOf"):
            for branch in schema.get(key, []):
                more = self.json_types(branch)
                if more is None:
                    return None
                types |= more
        return types if types - {"null"} else None

    def differences(self, schema: dict[str, Any], body: Any) -> tuple[list[str], list[str]]:
        """Where `body`'s top level differs from `schema`: (required keys missing, keys of the wrong type).
        Of anyOf/oneOf branches, the one it matches best; null passes where the spec says nullable or the key
        is not required."""
        schema = self.resolve(schema)
        branches = schema.get("anyOf") or schema.get("oneOf")
        if branches:
            return min((self.differences(b, body) for b in branches), key=lambda d: len(d[0]) + len(d[1]))
        expected = self.json_types(schema)
        if expected is not None and json_type(body) not in expected:
            return [], [f"(body) {json_type(body)}, not {'/'.join(sorted(expected))}"]
        if not isinstance(body, dict):
            return [], []
        properties, required = self.object_parts(schema)
        missing = [name for name in required if name not in body]
        wrong = []
        for name, value in body.items():
            allowed = self.json_types(properties[name]) if name in properties else None
            if allowed is None:
                continue  # a key the spec does not know, or does not type
            if json_type(value) not in allowed | ({"null"} if name not in required else set()):
                wrong.append(f"{name} {json_type(value)}, not {'/'.join(sorted(allowed))}")
        return missing, wrong
