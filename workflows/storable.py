"""Values Postgres can store: no NUL characters, no lone surrogates, no NaN, nesting within a limit.

Postgres refuses U+0000 in text and jsonb, UTF-8 cannot encode a lone surrogate (U+D800..U+DFFF), JSON has
no NaN, and recursive code (json, the database's parser) overflows on data nested deeply enough. Values are
checked where they enter (a request, a step's output), where the offending field can still be named.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from itertools import compress
from typing import Any

import yaml

from expressions.data import MAX_DEPTH

Loc = tuple[Any, ...]

_CONTAINER_TYPES = frozenset({dict, list, tuple})
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# A path part printed as `.name`; anything else is printed as `['...']`, escaped, so it is readable and
# itself storable (a key may be the very thing that is wrong).
_PLAIN_NAME = re.compile(r"[^\s'\"\[\]\\.]+")
SURROGATE = re.compile("[\\ud800-\\udfff]")


@dataclass(frozen=True)
class Unstorable:
    loc: Loc  # where in the value: keys and list indexes
    message: str  # completes a sentence whose subject is the value at `loc`


def text_problem(text: str) -> str | None:
    """What makes `text` unstorable, or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored"
    if not text.isascii() and (found := SURROGATE.search(text)):
        return f"contains a lone surrogate (\\u{ord(found.group()):04x}), which is not valid Unicode"
    return None


def too_deep(loc: Loc, limit: int = MAX_DEPTH) -> Unstorable:
    return Unstorable(loc, f"is nested more than {limit} levels deep, the limit")


def find_unstorable(
    value: Any, limit: int | None = MAX_DEPTH, scalars: bool = True, most: int = 10
) -> list[Unstorable]:
    """Up to `most` problems in plain data: containers nested deeper than `limit` and, with `scalars`,
    unstorable strings (keys too) and non-finite floats. Iterative, so any depth works."""
    if not scalars and (limit is None or not _deeper_than(value, limit)):
        return []  # the common case, decided without building a path for every value
    found: list[Unstorable] = []
    stack: list[tuple[Loc, Any]] = [((), value)]
    while stack and len(found) < most:
        loc, item = stack.pop()
        if isinstance(item, dict | list | tuple):
            if limit is not None and len(loc) >= limit:
                found.append(too_deep(loc, limit))
            else:
                stack.extend(reversed(_children(loc, item, scalars, found)))
        elif scalars and (problem := _scalar_problem(item)):
            found.append(Unstorable(loc, problem))
    return found[:most]


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether containers nest more than `limit` deep: a level at a time, each filtered at C speed (by
    exact type: this is for parsed JSON, which has no subclasses)."""
    level = [value] if type(value) in _CONTAINER_TYPES else []
    depth = 0
    while level:
        depth += 1
        below: list[Any] = []
        for item in level:
            members = item.values() if type(item) is dict else item
            below.extend(compress(members, map(_CONTAINER_TYPES.__contains__, map(type, members))))
        if below and depth >= limit:
            return True
        level = below
    return False


def _is_container(value: Any) -> bool:
    return isinstance(value, dict | list | tuple)


def _children(loc: Loc, item: Any, scalars: bool, found: list[Unstorable]) -> list[tuple[Loc, Any]]:
    pairs = item.items() if isinstance(item, dict) else enumerate(item)
    if not scalars:  # only containers can nest too deep
        return [(loc + (key,), child) for key, child in pairs if _is_container(child)]
    children = []
    for key, child in pairs:
        if isinstance(key, str) and (problem := text_problem(key)):
            found.append(Unstorable(loc + (key,), "has a key that " + problem))
        children.append((loc + (key,), child))
    return children


def _scalar_problem(item: Any) -> str | None:
    if isinstance(item, str):
        return text_problem(item)
    if isinstance(item, float) and not math.isfinite(item):
        return "is NaN or Infinity, which JSON cannot hold"
    return None


def format_path(loc: Loc) -> str:
    """`body.metadata.tags[2]`; odd keys as `['a b']`, escaped."""
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif isinstance(item, str) and item.isprintable() and _PLAIN_NAME.fullmatch(item):
            parts.append(f".{item}" if parts else item)
        else:
            parts.append(f"[{storable_text(repr(item))}]")
    return "".join(parts) or "(the whole value)"


def storable_text(text: str) -> str:
    """`text` with NUL characters and lone surrogates written as escapes (for error messages)."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode()


# A string (escapes included) or one structural character of JSON text.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]')


def json_depth_loc(text: str | bytes, limit: int = MAX_DEPTH) -> Loc | None:
    """Where JSON text first nests a container deeper than `limit`, read without building the value (for text
    json.loads cannot parse: it recurses, and gives up past some hundreds of levels)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    loc: list[Any] = []  # the key or index, in each open container, of the member being read
    key_next = False  # the next string in an object is a key
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            if len(loc) >= limit:
                return tuple(loc)
            loc.append(0 if token == "[" else None)
            key_next = token == "{"
        elif token in "]}":
            if not loc:
                return None
            loc.pop()
            key_next = False
        elif token == ",":
            if loc and isinstance(loc[-1], int):
                loc[-1] += 1
            key_next = bool(loc) and not isinstance(loc[-1], int)
        elif key_next:
            loc[-1] = _key(token)
            key_next = False
    return None


def _key(token: str) -> str:
    try:
        return str(json.loads(token))
    except ValueError:
        return token


def yaml_depth_loc(text: str | bytes, limit: int = MAX_DEPTH) -> Loc | None:
    """Where a YAML document first nests a collection deeper than `limit`, from the parser's events. They
    come without recursion; libyaml's composer recurses in C, and deep enough input crashes the process."""
    try:
        return _yaml_depth_loc(text, limit)
    except yaml.MarkedYAMLError as exc:
        # libyaml (PyYAML >= 6.0.4) refuses nesting past its own limit (1,000) while it scans ahead, before it
        # hands us the events of the levels where ours is crossed: read them again from the text before that
        # point. The mark counts characters.
        mark = exc.problem_mark
        if mark is None or "nesting depth" not in (exc.problem or ""):
            raise
        whole = text.decode("utf-8") if isinstance(text, bytes) else text
        loc = _yaml_depth_loc(whole[: mark.index], limit) if mark.index < len(whole) else None
        if loc is None:
            raise
        return loc


def _yaml_depth_loc(text: str | bytes, limit: int) -> Loc | None:
    collections: list[_Collection] = []  # the open ones, outermost first
    for event in yaml.parse(text, Loader=_YAML_LOADER):
        if isinstance(event, yaml.CollectionEndEvent):
            collections.pop()
        elif isinstance(event, yaml.NodeEvent):
            if collections:
                collections[-1].next_member(event)
            if isinstance(event, yaml.CollectionStartEvent):
                if len(collections) >= limit:
                    return tuple(c.member for c in collections)
                collections.append(_Collection(isinstance(event, yaml.MappingStartEvent)))
    return None


@dataclass
class _Collection:
    mapping: bool
    member: Any = -1  # the key or index of the member being read
    key_next: bool = True  # in a mapping, nodes alternate: key, value

    def next_member(self, node: yaml.NodeEvent) -> None:
        if not self.mapping:
            self.member += 1
        elif self.key_next:
            self.member = node.value if isinstance(node, yaml.ScalarEvent) else "?"
        self.key_next = not self.key_next
