"""How much a tool call's arguments weigh once their `<<var:name>>` references are filled in
(workflows/references.py), known before anything is built: 200 references to a 500 KB value would make a
100 MB request.

Every reference counts its variable's whole size each time it appears, as the request repeats it; a variable is
measured once. The arguments are held to the limits of any value in the sandbox: MAX_ELEMENTS as `bounded_size`
counts them (a string 1 + 1 per 8 characters, a list or dict CONTAINER_WEIGHT), MAX_STRING_LENGTH for a string
that references are written into, MAX_RESULT_DEPTH levels of nesting. The work is charged to the step's budget.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from typing import Any

from expressions.budget import (
    CHARS_PER_UNIT,
    MAX_ELEMENTS,
    MAX_STRING_LENGTH,
    SCANS_PER_UNIT,
    Budget,
    LimitExceeded,
)
from expressions.data import CONTAINER_WEIGHT, counted
from workflows.values import MAX_RESULT_DEPTH

# A reference, as the model writes it (here, not in references.py, which imports this module).
NAME = r"[A-Za-z_][A-Za-z0-9_]*"
REFERENCE = re.compile(r"<<var:(" + NAME + r")>>")
WHOLE_REFERENCE = re.compile(r"\s*<<var:(" + NAME + r")>>\s*")
TOKEN_CHARS = len("<<var:>>")  # a reference's characters besides its name


class ReferencesTooLarge(LimitExceeded):
    """The arguments a tool call's references would make pass a value limit, or the step's budget: refused
    before they are built. Not the model's to read, unlike a BadReference: a step fails, a chat answers 413.
    Its text names the limit first, as an expression's does."""

    def __init__(self, message: str):
        super().__init__(f"LimitExceeded: {message}")


@dataclass
class Weights:
    """What each variable weighs, measured the first time a reference needs it (a name is bound once, so
    neither goes stale): its elements and levels of nesting, and the length of its text."""

    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    texts: dict[str, int] = field(default_factory=dict)

    def measure(self, name: str, value: Any) -> tuple[int, int]:
        """Elements as bounded_size counts them (stopping once past MAX_ELEMENTS) and levels of nesting."""
        if name not in self.sizes:
            elements = counted(value, MAX_ELEMENTS)
            self.sizes[name] = (elements, levels(value) if elements <= MAX_ELEMENTS else 0)
        return self.sizes[name]

    def text_length(self, where: str, name: str, value: Any) -> int:
        """The length of the text a reference inside a longer string writes (the value's JSON unless it is a
        string). As str() in the sandbox, a value over MAX_ELEMENTS is refused before it is written."""
        if name not in self.texts:
            if isinstance(value, str):
                self.texts[name] = len(value)
            elif self.measure(name, value)[0] > MAX_ELEMENTS:
                raise ReferencesTooLarge(
                    f"argument {where!r}: variable {name!r} is too large to write as text "
                    f"(over {MAX_ELEMENTS} elements)"
                )
            else:
                self.texts[name] = len(json.dumps(value))
        return self.texts[name]


class ArgumentsSize:
    """The size of one call's arguments with their references filled in, added up argument by argument."""

    def __init__(self, weights: Weights, value_of: Callable[[str, str], Any]):
        self.weights = weights
        self.value_of = value_of  # (argument, name) -> the variable's value, or BadReference
        self.elements = CONTAINER_WEIGHT  # the arguments' own object
        self.copied = 0  # characters written into text
        self.references = 0

    def add(self, key: str, value: Any) -> None:
        """Count argument `key`; ReferencesTooLarge as soon as the arguments pass a limit."""
        stack = [(value, 1)]  # an item, and how many lists and dicts hold it (the arguments' object is one)
        while stack:
            item, around = stack.pop()
            kind = type(item)
            if kind is dict or kind is list:
                self._nesting(key, around + 1)
                self.elements += CONTAINER_WEIGHT
                if kind is dict:
                    self.elements += len(item) + sum(len(k) for k in item if isinstance(k, str)) // 8
                stack.extend((member, around + 1) for member in (item.values() if kind is dict else item))
            elif kind is str and "<<var:" in item:
                whole = WHOLE_REFERENCE.fullmatch(item)
                if whole:
                    self._whole(key, whole.group(1), around)
                else:
                    self._text(key, item)
            else:
                self.elements += counted(item)
            if self.elements > MAX_ELEMENTS:
                raise ReferencesTooLarge(
                    f"argument {key!r}: once {self.references} references are filled in (each counts its "
                    f"variable's whole size), the arguments would hold over {MAX_ELEMENTS} elements (text "
                    "counts one per 8 characters), the most any value may hold; pass fewer or smaller values"
                )

    def _whole(self, key: str, name: str, around: int) -> None:
        elements, nested = self.weights.measure(name, self.value_of(key, name))
        self.references += 1
        self.elements += elements
        self._nesting(key, around + nested)

    def _text(self, key: str, text: str) -> None:
        names = REFERENCE.findall(text)
        length = len(text) - sum(len(name) + TOKEN_CHARS for name in names)
        for name in names:
            self.references += 1
            length += self.weights.text_length(key, name, self.value_of(key, name))
            if length > MAX_STRING_LENGTH:
                raise ReferencesTooLarge(
                    f"argument {key!r}: with its {len(names)} references filled in, its text would be "
                    f"longer than {MAX_STRING_LENGTH} characters, the longest any string may be"
                )
        self.copied += length
        self.elements += 1 + length // 8

    def _nesting(self, key: str, nested: int) -> None:
        if nested > MAX_RESULT_DEPTH:
            raise ReferencesTooLarge(
                f"argument {key!r}: with references filled in, the arguments would nest more than "
                f"{MAX_RESULT_DEPTH} levels deep, the most any value may"
            )

    def charge(self, budget: Budget | None) -> None:
        """Charge the step: the request writes every element (at C speed), and text is copied. Refused, with
        nothing charged, when the step cannot pay."""
        if budget is None:
            return
        units = self.elements // SCANS_PER_UNIT + self.copied // CHARS_PER_UNIT
        if units > budget.left:
            raise ReferencesTooLarge(
                f"filling in the call's {self.references} references would cost {units} operations, and the "
                f"step has {max(budget.left, 0)} of its {budget.per_step} left; split the work across steps"
            )
        try:
            budget.charge(units)
        except LimitExceeded as exc:  # the CPU guard behind the units
            raise ReferencesTooLarge(f"filling in the call's references: {exc}") from None


def levels(value: Any) -> int:
    """How many levels lists and dicts nest in `value` (0 for a scalar, 1 for a flat list), counting no
    further than one past MAX_RESULT_DEPTH: a level at a time, at C speed (as data.nests_deeper walks)."""
    level, depth = [value], 0
    while depth <= MAX_RESULT_DEPTH:
        kinds = list(map(type, level))
        dicts = list(compress(level, map(operator.is_, kinds, repeat(dict))))
        lists = list(compress(level, map(operator.is_, kinds, repeat(list))))
        if not dicts and not lists:
            break
        depth += 1
        level = [*chain.from_iterable(map(dict.values, dicts)), *chain.from_iterable(lists)]
    return depth
