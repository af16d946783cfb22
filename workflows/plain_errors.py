"""Pydantic's validation errors in Mint's words: each becomes a Problem with a path like `main[2].evaluate.x`
and a plain sentence ("missing", "must be a list of steps", "unknown key `contnet`: did you mean `content`?"),
never pydantic's own ("Field required", "Value error, ...", "Input should be a valid dictionary").

Used for task documents (workflows/partial_parse.py), agent tools and request bodies (api/).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, get_args

from pydantic import BaseModel

from workflows import language as lang
from workflows.problems import Problem, Suggestions

Loc = tuple[Any, ...]


def _models_in(annotation: Any) -> set[type[BaseModel]]:
    """The models an annotation names (through unions, lists, dicts and Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {annotation}
    return {model for arg in get_args(annotation) for model in _models_in(arg)}


def _language_models() -> dict[str, type[BaseModel]]:
    """Every model of the task language, by class name (pydantic names union members by it in locations)."""
    found: dict[str, type[BaseModel]] = {}
    todo: list[type[BaseModel]] = [lang.TaskSpec, lang.ToolDef, *lang.STEP_MODELS]
    while todo:
        model = todo.pop()
        if model.__name__ not in found:
            found[model.__name__] = model
            todo += [m for field in model.model_fields.values() for m in _models_in(field.annotation)]
    return found


MODELS = _language_models()
# The models each key holds (`retry` -> RetrySpec, `switch` -> CaseThen): an unknown key's container.
MODELS_UNDER: dict[str, set[type[BaseModel]]] = {}
for _model in MODELS.values():
    for _name, _field in _model.model_fields.items():
        if inner := _models_in(_field.annotation):
            MODELS_UNDER.setdefault(_field.alias or _name, set()).update(inner)
# The names pydantic gives the members of a union that are not models (`str`, `list[Message]`).
_PLAIN_MEMBERS = frozenset({"str", "int", "float", "bool", "none", "list", "dict", "any"})
# Errors that say "the input is not of this member's type": a union member whose only errors are these did
# not fit at all, and the problems to show are those of the member that did.
_TYPE_ERRORS = {
    "string_type": "text",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "none_required": "null",
    "literal_error": "{expected}",
}
_WORDS = {
    "missing": "missing",
    "int_from_float": "must be a whole number",
    "finite_number": "must be a finite number",
    "greater_than": "must be more than {gt}",
    "greater_than_equal": "must be at least {ge}",
    "less_than": "must be less than {lt}",
    "less_than_equal": "must be at most {le}",
    "string_too_long": "must be at most {max_length} characters long",
    "too_long": "must have at most {max_length} items",
    "json_invalid": "is not valid JSON: {error}",
    "uuid_parsing": "must be an id (a UUID)",
    "uuid_type": "must be an id (a UUID)",
    "enum": "must be {expected}",
    "value_error": "{error}",
    "assertion_error": "{error}",
}
NAME_RULE = "must be a name: letters, digits, `_` and `-`, starting with a letter or `_`"


def plain_problems(
    errors: Sequence[Any],
    base: str = "",
    tagged: bool = False,
    root: type[BaseModel] | None = None,
    suggest: Suggestions | None = None,
) -> list[Problem]:
    """Problems for pydantic's `errors`, each at `base` plus its location. `tagged`: the locations start
    with a step kind's tag (a step parsed on its own); `root`: the model parsed (for unknown keys at its top);
    `suggest`: the document's budget for suggestions (a budget of its own by default)."""
    words = _Words(root, suggest or Suggestions())
    found = _fitting_members([_below(e) for e in errors])
    return [Problem(format_loc(tuple(e["loc"]), base, tagged), words(e)) for e in found]


def _below(error: Any) -> Any:
    """An error whose validator names where below its field it is (`ctx.below`), at that place."""
    below = (error.get("ctx") or {}).get("below")
    return {**error, "loc": (*error["loc"], *below)} if below else error


def format_loc(loc: Loc, base: str = "", tagged: bool = False) -> str:
    """Turn a pydantic error location into `main[1].then[0].evaluate`, dropping union tags (a task's
    `workflows` level too: users write workflows at the top level)."""
    parts: list[str] = [base] if base else []
    previous: Any = 0 if tagged else None
    items = loc[1:] if loc[:1] == ("workflows",) and not base else loc
    for i, item in enumerate(items):
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif isinstance(previous, int) and item in lang.STEP_KINDS:
            pass  # the step union's tag, not a field
        elif _is_member(item) and i < len(items) - 1:
            pass  # a union member's name
        else:
            parts.append(f".{item}" if parts else str(item))
        previous = item
    return "".join(parts) or "(task)"


def _is_member(item: Any) -> bool:
    """Whether a location item names a union member (`ToolRef`, `str`, `list[Message]`), not a key."""
    return isinstance(item, str) and (item in MODELS or item in _PLAIN_MEMBERS or "[" in item)


def _fitting_members(errors: Sequence[Any]) -> list[Any]:
    """Where a value fits no member of a union, one error saying what it may be; where it fits one, that
    member's errors only (pydantic lists every member's)."""
    by_site: dict[Loc, dict[str, list[Any]]] = {}
    kept: list[Any] = []
    for error in errors:
        loc = tuple(error["loc"])
        last = len(loc) - 1 if error["type"] == "extra_forbidden" else len(loc)  # an unknown key is a key
        at = next((i for i, item in enumerate(loc[:last]) if _is_member(item)), None)
        if at is None:
            kept.append(error)
        else:
            by_site.setdefault(loc[:at], {}).setdefault(loc[at], []).append(error)
    for site, members in by_site.items():
        fits = {m: errs for m, errs in members.items() if not all(_mismatch(e, len(site)) for e in errs)}
        if fits:
            kept += [e for errs in fits.values() for e in errs]
        else:
            allowed = dict.fromkeys(_noun(e) for errs in members.values() for e in errs)
            kept.append({"type": "union", "loc": site, "ctx": {"allowed": " or ".join(allowed)}})
    return kept


def _mismatch(error: Any, site_length: int) -> bool:
    return error["type"] in _TYPE_ERRORS and len(error["loc"]) == site_length + 1


def _noun(error: Any) -> str:
    return _TYPE_ERRORS[error["type"]].format(**(error.get("ctx") or {}))


def _reworded(message: str) -> str:
    """A pydantic message this module has no sentence for, without pydantic's phrasing."""
    message = re.sub(r"^(Value error|Assertion failed), ", "", message)
    message = message.replace("Input should be a valid dictionary", "must be a mapping")
    message = message.replace("Input should be a valid string", "must be text")
    message = re.sub(r"^Input should be (a valid )?", "must be ", message)
    return message[:1].lower() + message[1:]


def _keys_around(loc: Loc, root: type[BaseModel] | None) -> set[str] | None:
    """The keys of the model an unknown key was found in, from the nearest key or member name above it."""
    for item in reversed(loc):
        if isinstance(item, int):
            continue
        named = [MODELS[n] for n in re.findall(r"\w+", item) if n in MODELS] if _is_member(item) else []
        models = set(named) or MODELS_UNDER.get(item, set())
        if models:
            return {key for model in models for key in lang.model_keys(model)}
        if not _is_member(item):
            return None
    return set(lang.model_keys(root)) if root else None


class _Words:
    """The sentence for each error of one parse."""

    def __init__(self, root: type[BaseModel] | None, suggest: Suggestions):
        self.root = root
        self.suggest = suggest

    def __call__(self, error: Any) -> str:
        kind, ctx, loc = error["type"], error.get("ctx") or {}, tuple(error["loc"])
        if kind == "union":
            return f"must be {ctx['allowed']}"
        if kind == "extra_forbidden":
            return self._unknown_key(loc)
        if loc[:1] == ("workflows",) and len(loc) == 2 and kind in ("list_type", "too_short"):
            return "must be a list of steps (at least one)"
        if kind in _TYPE_ERRORS:
            return f"must be {_noun(error)}"
        if kind in ("too_short", "string_too_short"):
            minimum = ctx.get("min_length", 1)
            unit = "characters long" if kind == "string_too_short" else "items"
            return "must not be empty" if minimum == 1 else f"must be at least {minimum} {unit}"
        if kind == "string_pattern_mismatch":
            return NAME_RULE if ctx.get("pattern") == lang.NAME_PATTERN else "does not have the expected form"
        if kind in _WORDS:
            return _WORDS[kind].format(**{k: str(v) for k, v in ctx.items()})
        return _reworded(error["msg"])

    def _unknown_key(self, loc: Loc) -> str:
        key = loc[-1]
        keys = _keys_around(loc[:-1], self.root)
        if keys is None:
            return f"unknown key `{key}`: not allowed here"
        hint = self.suggest(str(key), keys)
        return f"unknown key `{key}`" + (hint or f": not allowed here (keys: {', '.join(sorted(keys))})")
