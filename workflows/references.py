"""Pass by reference (after Conatus, seed 002): the model handles names for large values.

With `pass_by_reference: true` in a prompt step's settings (or a session's, for chat), a tool result whose JSON
text is longer than `reference_threshold` characters becomes a named variable, and the model reads a short
preview naming it, `<<var:name>>`, instead of the value; a task's `state` values are variables too, named by
their keys. The model may write `<<var:name>>` in a tool call's arguments, and Mint puts the full value there
before the call runs:

- an argument (at any depth) that is exactly `<<var:name>>` becomes the variable's value, whatever its type;
- a reference inside a longer string is replaced by the value's text (a string as it is, anything else as JSON).

Each tool's parameter schema tells the model which variables fit each top-level parameter (by JSON type), as
Conatus does: the parameter becomes `anyOf` its own schema or an enum of the fitting references. A parameter
marked `"x-by-reference": true` takes a reference only; a tool with such a required parameter is offered only
while a variable fits it. A reference to no variable, or to one that does not fit, is an error the model
reads as the tool's result (`invalid_reference`, naming the variables there are); the tool does not run.

Filling references in is bounded before anything is built (workflows/reference_size.py): every reference counts
its variable's whole size each time it appears, the arguments must stay within the limits of any value, and
the work is charged to the step's budget. Past a limit, ReferencesTooLarge: a step fails (a chat answers 413).

Pure functions and one small mutable holder (Variables), so all of it runs inside a workflow: the variables
come from tool results (activities) and the state, so a replay rebuilds them identically.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from contracts.json import JsonObject, JsonValue
from expressions.budget import Budget
from workflows.reference_size import NAME, REFERENCE, WHOLE_REFERENCE, ArgumentsSize, Weights
from workflows.reference_size import ReferencesTooLarge as ReferencesTooLarge  # what callers catch

ENABLED_KEY = "pass_by_reference"
THRESHOLD_KEY = "reference_threshold"
SETTING_KEYS = (ENABLED_KEY, THRESHOLD_KEY)
BY_REFERENCE_KEY = "x-by-reference"  # in a tool parameter's schema: a variable reference only
DEFAULT_THRESHOLD = 2000  # characters of a tool result's JSON text
PREVIEW_CHARS = 200
# An execution that started before pass by reference existed keeps sending the setting to the model as it was.
REFERENCES_PATCH = "issue-17-pass-by-reference"
# One that started before substitution was bounded replays its tool calls unbounded, as they ran.
BOUNDED_PATCH = "issue-27-bounded-references"


class BadReference(ValueError):
    """A tool call's reference names no variable, or one that does not fit its parameter: the model reads
    this message as the call's error result."""


@dataclass(frozen=True)
class ReferenceSettings:
    enabled: bool = False
    threshold: int = DEFAULT_THRESHOLD


def split_settings(settings: JsonObject) -> tuple[ReferenceSettings, JsonObject]:
    """The reference settings, and the rest (what the model is sent). Lenient: a task's bad values are
    refused when it is created (setting_problems); here a value that is not one reads as the default."""
    rest = {k: v for k, v in settings.items() if k not in SETTING_KEYS}
    threshold: Any = settings.get(THRESHOLD_KEY)
    enabled = settings.get(ENABLED_KEY) is True
    return ReferenceSettings(enabled, threshold if _whole(threshold) else DEFAULT_THRESHOLD), rest


def setting_problems(settings: JsonObject | None) -> list[str]:
    """What is wrong with the reference settings among these settings, in plain words."""
    settings = settings or {}
    problems = []
    if not isinstance(settings.get(ENABLED_KEY, False), bool):
        problems.append(f"`{ENABLED_KEY}` must be true or false")
    threshold = settings.get(THRESHOLD_KEY)
    if threshold is not None and not _whole(threshold):
        problems.append(f"`{THRESHOLD_KEY}` must be a whole number of characters, at least 1")
    return problems


# Types ---------------------------------------------------------------------------------------------------


def json_type(value: Any) -> str:
    """The JSON type of a value, as JSON schema names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object"


def fits(schema: Any, value: Any) -> bool:
    """Whether a value fits a parameter's schema, by JSON type (an integer fits `number`), `enum` and
    `const`, and any branch of `anyOf`/`oneOf`; a schema that says nothing of these takes anything."""
    if not isinstance(schema, dict):
        return True
    if "enum" in schema and value not in schema["enum"]:
        return False
    if "const" in schema and value != schema["const"]:
        return False
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and not any(fits(branch, value) for branch in branches):
        return False
    declared = schema.get("type")
    if declared is None:
        return True
    allowed = set(declared) if isinstance(declared, list) else {declared}
    kind = json_type(value)
    return kind in allowed or (kind == "integer" and "number" in allowed)


# Variables -----------------------------------------------------------------------------------------------


@dataclass
class Variables:
    """The variables of one tool loop, by name, in the order they appeared."""

    threshold: int = DEFAULT_THRESHOLD
    values: dict[str, JsonValue] = field(default_factory=dict)
    # Filling references in is bounded (reference_size.py) and charged to `budget` (a step's, in a workflow);
    # unbounded only in a run that started before the bound, replayed.
    budget: Budget | None = field(default=None, repr=False, compare=False)
    bounded: bool = True
    weights: Weights = field(default_factory=Weights, repr=False, compare=False)

    @classmethod
    def start(
        cls,
        settings: ReferenceSettings,
        state: JsonObject | None = None,
        budget: Budget | None = None,
        bounded: bool = True,
    ) -> Variables:
        """A loop's variables: to begin with, the task's state values whose keys can be names."""
        named = {k: v for k, v in (state or {}).items() if re.fullmatch(NAME, k)}
        return cls(settings.threshold, named, budget, bounded)

    def listing(self, names: list[str] | None = None) -> str:
        """Variables (these, or all) as the model reads them in an error: `a (string), b (object)`."""
        chosen = list(self.values) if names is None else names
        if not chosen:
            return "none"
        return ", ".join(f"{name} ({json_type(self.values[name])})" for name in chosen)

    def fitting(self, schema: Any) -> list[str]:
        return [name for name, value in self.values.items() if fits(schema, value)]

    # What the model sees -----------------------------------------------------------------------------------

    def offer(self, tools: list[JsonObject]) -> list[JsonObject]:
        """The tools (OpenAI function format) as offered now: each parameter says which variables fit it,
        and a tool whose required by-reference parameter no variable fits is left out."""
        offered = []
        for tool in tools:
            function = tool.get("function")
            function = function if isinstance(function, dict) else {}
            parameters = function.get("parameters")
            schema = self.offered_schema(parameters if isinstance(parameters, dict) else {})
            if schema is not None:
                offered.append({**tool, "function": {**function, "parameters": schema}})
        return offered

    def offered_schema(self, schema: JsonObject) -> JsonObject | None:
        """A tool's parameter schema with the references that fit each parameter, or None when a required
        by-reference parameter has none."""
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return schema
        required = schema.get("required")
        required = required if isinstance(required, list) else []
        shown: JsonObject = {}
        for name, prop in properties.items():
            fitting = self.fitting(prop)
            if isinstance(prop, dict) and prop.get(BY_REFERENCE_KEY):
                if not fitting:
                    if name in required:
                        return None
                    continue  # an optional by-reference parameter with nothing to pass is not shown
                shown[name] = _reference_choice(name, prop, fitting, only=True)
            elif fitting and isinstance(prop, dict):
                shown[name] = _reference_choice(name, prop, fitting, only=False)
            else:
                shown[name] = prop
        return {**schema, "properties": shown}

    def keep(self, tool_name: str, result: JsonObject) -> tuple[JsonObject, str | None]:
        """A structured tool result as the model reads it: over the threshold, its data becomes a new
        variable, and the model reads a preview naming it. Also returns the variable's name (or None)."""
        if result.get("status") != "success":
            return result, None
        data = result.get("data")
        text = data if isinstance(data, str) else json.dumps(data)
        if len(json.dumps(data)) <= self.threshold:
            return result, None
        name = self._new_name(tool_name)
        self.values[name] = data
        self.weights.texts[name] = len(text)  # what a reference inside text becomes (_as_text)
        preview = text[:PREVIEW_CHARS] + ("…" if len(text) > PREVIEW_CHARS else "")
        summary: JsonObject = {
            "reference": f"<<var:{name}>>",
            "type": json_type(data),
            "size": len(text),
            "preview": preview,
            "note": f"the full value is in variable {name}; pass it to a tool as <<var:{name}>>",
        }
        return {**result, "data": summary}, name

    def _new_name(self, tool_name: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", tool_name) or "result"
        n = 1
        while f"{base}_{n}" in self.values:
            n += 1
        return f"{base}_{n}"

    # What the tool receives ------------------------------------------------------------------------------

    def resolve(self, schema: JsonObject, arguments: JsonObject) -> JsonObject:
        """The arguments with every reference replaced by its value; BadReference for a reference to no
        variable, one that does not fit its parameter, or a literal where a reference is required; and,
        before anything is built, ReferencesTooLarge when they would pass a value limit or the budget."""
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        size = ArgumentsSize(self.weights, self._value)
        for key, value in arguments.items():
            prop = properties.get(key)
            whole = WHOLE_REFERENCE.fullmatch(value) if isinstance(value, str) else None
            if whole:
                self._fitting_value(key, prop, whole.group(1))
            elif isinstance(prop, dict) and prop.get(BY_REFERENCE_KEY):
                raise BadReference(
                    f"argument {key!r} takes a variable by reference only (write '<<var:name>>'); "
                    f"variables that fit: {self.listing(self.fitting(prop))}"
                )
            if self.bounded:
                size.add(key, value)
        if self.bounded:
            size.charge(self.budget)
        return {key: self._substitute(key, value) for key, value in arguments.items()}

    def _value(self, where: str, name: str) -> Any:
        if name not in self.values:
            raise BadReference(
                f"argument {where!r}: there is no variable {name!r}; variables: {self.listing()}"
            )
        return self.values[name]

    def _fitting_value(self, key: str, prop: Any, name: str) -> Any:
        value = self._value(key, name)
        if not fits(prop, value):
            raise BadReference(
                f"argument {key!r}: variable {name!r} is {json_type(value)}, which does not fit the "
                f"parameter (type {_declared(prop)}); variables that fit: {self.listing(self.fitting(prop))}"
            )
        return value

    def _substitute(self, where: str, value: Any) -> Any:
        """References nested in an argument: whole ones become values, ones inside text become text."""
        if isinstance(value, dict):
            return {k: self._substitute(where, v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._substitute(where, v) for v in value]
        if not isinstance(value, str) or "<<var:" not in value:
            return value
        whole = WHOLE_REFERENCE.fullmatch(value)
        if whole:
            return self._value(where, whole.group(1))
        return REFERENCE.sub(lambda m: _as_text(self._value(where, m.group(1))), value)


def error_result(exc: BadReference) -> JsonObject:
    """A bad reference as a structured tool result's `error`."""
    return {"code": "invalid_reference", "message": str(exc)}


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _declared(prop: Any) -> str:
    declared = prop.get("type") if isinstance(prop, dict) else None
    if isinstance(declared, list):
        return " or ".join(map(str, declared))
    return str(declared or "any")


def _reference_choice(name: str, prop: JsonObject, fitting: list[str], only: bool) -> JsonObject:
    """A parameter's schema offering the variables that fit it (Conatus's `<param>_possible_variables`)."""
    own = {k: v for k, v in prop.items() if k not in (BY_REFERENCE_KEY, "description")}
    references: JsonObject = {
        "type": "string",
        "enum": [f"<<var:{v}>>" for v in fitting],
        "description": (
            f"You can pass {name!r} by reference with '<<var:name>>' naming a variable that fits "
            f"(type {_declared(prop)}) among {fitting}"
        ),
    }
    described = {"description": prop["description"]} if isinstance(prop.get("description"), str) else {}
    if only:
        return {**described, **references}
    return {**described, "anyOf": [own, references]}
