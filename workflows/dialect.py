"""How each string in a task is read: Python, a Jinja template, or text, string by string as Julep v1 reads it.

Julep v1 (`backwards_compatibility` in its `common/utils/task_validation.py`) decides per string: `$ expr`
is Python, a string with `{{` is a template, `_`, `_.x`, `_[...]`, `[...]` and strings naming `inputs[` or
`outputs[` are Python, anything else is text. The seed (Julep's concepts document) writes bare Python in a
task with no `$ ` at all (`sleep: 24*3600`, `subject: '"Daily Motivation"'`), so in such a task a string
Julep would call text is Python when it is plainly an expression: it parses, names only names an expression
may use, and is more than the bare name of a function or module. Anything else there is text.

One pure function decides, at creation and when the step runs, so the creation answer's warnings say what
will run: one, with its path, for every string the other reading would take differently (a seed string Julep
would read as text and the reverse, a Julep shape in a `$` task, a `$` task's text that parses as Python, a
`$` with no space after it).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from expressions.parsing import (
    CONSTANTS,
    KNOWN_NAMES,
    PARSE_CEILING,
    check_expression,
    parse_expression,
)
from expressions.templates import is_template

Dialect = Literal["seed", "dollar"]
How = Literal["python", "template", "text"]

# Bare names that are functions or modules: never a value, so a string that is only one of them is text.
_HELPERS = KNOWN_NAMES - frozenset(CONSTANTS)
_DATA_CONSTANTS = (str, int, float, bool, type(None))

NO_SPACE = "read as text: `$` is Python only with a space after it (`$ expr`), as in Julep v1"
BY_SHAPE = (
    "read as Python although it has no `$ `: Julep v1 reads `_`, `_.x`, `_[...]`, `[...]` and strings naming "
    "`inputs[` or `outputs[` as Python (write `$ '...'` for text)"
)
DOLLAR_TEXT = (
    "read as text: in a task with `$ ` strings, only `$ expr` and Julep v1's shapes (`_`, `_.x`, `_[...]`, "
    "`[...]`, `inputs[`, `outputs[`) are Python (write `$ ...` for an expression)"
)
SEED_PYTHON = (
    "read as Python: a task with no `$ ` string is in the seed dialect, where a string that parses with "
    "known names is an expression (Julep v1 would read it as text)"
)


@dataclass(frozen=True)
class Reading:
    """How one string is read: `source` is the expression for `python`, else the string itself; `note`
    says why when the string could be read the other way (the creation answer's warning)."""

    how: How
    source: str
    note: str = ""
    by_shape: bool = False  # Python by Julep's shapes (`_[...]`, `inputs[`, ...), not by a `$ `


def dollar_expression(raw: str) -> str | None:
    """The expression in a `$ expr` string (leading whitespace allowed, as Julep strips it), else None."""
    text = raw.strip()
    return text[1:].strip() if text.startswith("$ ") else None


def python_source(raw: str) -> str:
    """The expression of a field that is always Python (`if`, `case`, `in`, `over`, `reduce`): a leading
    `$`, with or without a space, is dropped."""
    text = raw.strip()
    return text[1:].strip() if text.startswith("$") else text


def has_dollar(raw: Any) -> bool:
    """Whether a raw field value holds a `$ expr` string anywhere."""
    return any(dollar_expression(text) is not None for _, text in iter_strings(raw, ""))


def julep_shape(text: str) -> bool:
    """Julep v1's strings that are Python without `$ ` (`text` is stripped)."""
    return (
        text == "_"
        or text.startswith("_.")
        or (text.startswith(("_[", "[")) and text.endswith("]"))
        or "inputs[" in text
        or "outputs[" in text
    )


def dialect_of(name: str) -> Dialect:
    """A stored task's dialect (ExecutionParams.dialect): `seed`, or `dollar`, the only other one."""
    return "seed" if name == "seed" else "dollar"


@functools.lru_cache(maxsize=20_000)
def read_value(raw: str, dialect: Dialect) -> Reading:
    """How a string in a value field (evaluate, set, arguments, return, info, sleep, initial, search) is
    read (cached: each step reads its strings every time it runs)."""
    source = dollar_expression(raw)
    if source is not None:
        return Reading("python", source)
    if is_template(raw):
        return Reading("template", raw)
    text = raw.strip()
    if text.startswith("$"):
        return Reading("text", raw, NO_SPACE if _looks_like_python(text[1:]) else "")
    if julep_shape(text):
        return Reading("python", text, BY_SHAPE if dialect == "dollar" else "", by_shape=True)
    seed = _seed_reading(raw, text)
    if dialect == "seed":
        return seed
    return Reading("text", raw, DOLLAR_TEXT if seed.how == "python" else "")


def _looks_like_python(text: str) -> bool:
    """Whether a string without `$ ` would be an expression by any reading: noted when it is read as text
    (`$_.x`, `$ ` forgotten, or `1 + 1` in a task with `$`), not when it is plainly text (`$USD`, `hello`)."""
    text = text.strip()
    return bool(text) and (julep_shape(text) or _seed_reading(text, text).how == "python")


def _seed_reading(raw: str, text: str) -> Reading:
    if not text:
        return Reading("text", raw)
    problems = check_expression(text, max_length=PARSE_CEILING)
    if problems:
        return Reading("text", raw, f"read as text, not Python ({problems[0]})")
    node = parse_expression(text)
    if isinstance(node, ast.Name) and node.id in _HELPERS:
        return Reading("text", raw, f"read as text, not Python ({node.id!r} names a function or module)")
    if isinstance(node, ast.Constant) and not isinstance(node.value, _DATA_CONSTANTS):
        return Reading("text", raw, f"read as text, not Python ({text!r} is not a value)")
    return Reading("python", text, SEED_PYTHON)


def read_template(raw: str) -> Reading:
    """How a string in a template field (prompt, `log`, `error`) is read: Jinja, or Python with `$ `."""
    source = dollar_expression(raw)
    if source is not None:
        return Reading("python", source)
    text = raw.strip()
    if text.startswith("$") and _looks_like_python(text[1:]):
        return Reading("template", raw, NO_SPACE)
    return Reading("template", raw)


def iter_strings(raw: Any, path: str) -> Iterator[tuple[str, str]]:
    """Yield (path, string) for every string in a raw value, nested ones included."""
    if isinstance(raw, str):
        yield path, raw
    elif isinstance(raw, dict):
        for key, value in raw.items():
            yield from iter_strings(value, f"{path}.{key}")
    elif isinstance(raw, list):
        for i, value in enumerate(raw):
            yield from iter_strings(value, f"{path}[{i}]")
