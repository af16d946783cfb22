"""The functions task expressions and templates may call by name.

Every function takes and returns plain data, charges the execution's work budget by the size of its input,
and checks the size of what it would build before building it; a function passed as a value (to map,
sorted, filter) charges on every call. Randomness comes from the workflow. Regular expressions use RE2
(see regex.py). The methods values offer are in methods.py.
"""

from __future__ import annotations

import contextlib
import functools
import json as _json
import operator
import random as _random
from collections.abc import Callable
from typing import Any

import yaml as _yaml

from expressions import regex, text_helpers
from expressions.budget import (
    CHARS_PER_UNIT,
    COPIES_PER_UNIT,
    ELEMENTS_PER_UNIT,
    MAX_RANGE,
    SCANS_PER_UNIT,
    Budget,
    LimitExceeded,
    big_ints_units,
    charge,
    int_units,
)
from expressions.data import OrderedSet, bounded_size, charge_keys, check_length, check_text
from expressions.operators import safe_divmod, safe_int, safe_power, safe_round, safe_str

MAX_INDENT = 16
_YAML_LOADER = getattr(_yaml, "CSafeLoader", _yaml.SafeLoader)
_YAML_DUMPER = getattr(_yaml, "CSafeDumper", _yaml.SafeDumper)
# Units per item (a character of a string argument, an element of a collection) of functions whose work
# grows with their input, measured against the budget's unit (see budget.py). YAML is built by Python code.
C_SPEED = 1 / SCANS_PER_UNIT
JSON_LOAD_PER_CHAR = 1 / 32
YAML_LOAD_PER_CHAR = 6
YAML_DUMP_PER_VALUE = 16
STATISTICS_PER_VALUE = 4
SORT_PER_ELEMENT = 0.5
PAIRS_PER_ELEMENT = 0.5  # enumerate, zip, map, filter: a tuple or a call per element
PICK_UNITS = 2  # random.sample and shuffle: Python code per element drawn
JSON_DUMP_UNITS = 16  # setting up an encoder


# A string iterated element by element becomes a string object per character: free for Latin-1 (Python
# keeps those), about 80 bytes for any other.
NON_ASCII_WEIGHT = 8


def _size(value: Any) -> int:
    if type(value) is str and not value.isascii():
        return len(value) * NON_ASCII_WEIGHT
    return len(value) if hasattr(value, "__len__") else 1


def charged(budget: Budget, func: Callable[..., Any], per_item: float = C_SPEED) -> Callable[..., Any]:
    """`func`, charging the budget for the size of its arguments first (a builtin runs at C speed, but not
    free): a unit, plus `per_item` per character or element, plus the size of big integers."""

    def call(*args: Any, **kwargs: Any) -> Any:
        values = (*args, *kwargs.values())
        budget.charge(1 + int(sum(map(_size, values)) * per_item) + sum(map(_big_int_units, values)))
        return func(*args, **kwargs)

    call.__name__ = getattr(func, "__name__", "function")
    call.mint_charged = True  # type: ignore[attr-defined]
    return call


def _big_int_units(value: Any) -> int:
    return int_units(value) if type(value) is int else 0


def eager(func: Callable[..., Any]) -> Callable[..., list[Any]]:
    """map/filter/zip/enumerate as lists: a lazy iterator would slip past the budget."""
    return lambda *args: list(func(*args))


def dump_json(
    value: Any,
    indent: int | None = None,
    sort_keys: bool = False,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
) -> str:
    """json.dumps with Python's defaults (as Julep's: non-ASCII escaped unless ensure_ascii=False)."""
    values = bounded_size(value)
    indent = None if indent is None else max(0, min(int(indent), MAX_INDENT))
    if separators is not None:
        separators = (str(separators[0])[:MAX_INDENT], str(separators[1])[:MAX_INDENT])
    # every value may start a line indented by its depth, and be followed by separators
    check_length(values * ((indent or 0) * _depth(value) + 2 + 2 * MAX_INDENT * (separators is not None)))
    width = 6 if ensure_ascii else 1  # `\uXXXX` per character
    charge(JSON_DUMP_UNITS + values // ELEMENTS_PER_UNIT * width)
    text = _json.dumps(
        value,
        indent=indent,
        ensure_ascii=ensure_ascii,
        allow_nan=False,
        sort_keys=sort_keys,
        separators=separators,
    )
    return check_text(text)


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list | tuple))
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item if isinstance(v, dict | list | tuple))
    return deepest


def load_json(text: str) -> Any:
    return text_helpers.parse_json(text)


def dump_yaml(value: Any) -> str:
    """yaml.dump with PyYAML's defaults, as Julep's (keys sorted, non-ASCII escaped)."""
    charge(bounded_size(value) * YAML_DUMP_PER_VALUE)
    return check_text(_yaml.dump(value, Dumper=_YAML_DUMPER))


def load_yaml(text: str) -> Any:
    charge(len(check_text(text)) * YAML_LOAD_PER_CHAR)
    # The safe loader builds only plain data; aliases can still multiply it, hence the size check after.
    loaded = _yaml.load(text, Loader=_YAML_LOADER)  # noqa: S506 - a safe loader
    bounded_size(loaded)
    _check_keys(loaded)
    return loaded


def _check_keys(value: Any) -> None:
    """YAML keys (and `!!set` members) may be numbers: refuse those made to collide (see charge_keys)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            charge_keys(list(item))
            stack.extend(item.values())
        elif isinstance(item, set):
            charge_keys(list(item))
        elif isinstance(item, list):
            stack.extend(item)


def safe_join(separator: str, items: Any) -> str:
    items = list(items)
    length = sum(len(i) for i in items if isinstance(i, str)) + len(separator) * max(len(items) - 1, 0)
    check_length(length)
    charge(len(items) // SCANS_PER_UNIT + length // CHARS_PER_UNIT)
    return separator.join(items)


def safe_replace(text: str, old: str, new: str, count: int = -1) -> str:
    """str.replace with the result's length checked before it is built."""
    hits = text.count(old) if count < 0 else min(count, text.count(old))
    check_length(len(text) + hits * max(len(new) - len(old), 0))
    charge((len(text) + hits * len(new)) // CHARS_PER_UNIT)
    return text.replace(old, new, count)


def random_functions(rng: _random.Random) -> dict[str, Callable[..., Any]]:
    """randint/sample/shuffle drawing on the workflow's generator, charged by what they draw."""

    def randint(a: int, b: int | None = None) -> int:
        """randint(n) picks from range(n) (the seed's usage); randint(a, b) is Python's inclusive form."""
        charge(int_units(a, b or 0))  # drawing a big number takes a word of randomness per 64 bits
        return rng.randrange(a) if b is None else rng.randint(a, b)

    def sample(population: Any, k: int, *, counts: Any = None) -> list[Any]:
        """random.sample: Python code per pick (and per count), so each is charged; k is bounded."""
        if not isinstance(k, int) or k > MAX_RANGE:
            raise LimitExceeded(f"a sample of {k} is over the limit of {MAX_RANGE}")
        charge(_size(population) // SCANS_PER_UNIT + PICK_UNITS * max(k, 0) + _size(counts or ()))
        return rng.sample(population, k, counts=counts)

    def shuffle(items: Any) -> list[Any]:
        items = list(items)
        charge(PICK_UNITS * len(items))
        return rng.sample(items, len(items))

    return {"randint": randint, "sample": sample, "shuffle": shuffle}


def safe_range(*args: int) -> range:
    result = range(*args)
    if len(result) > MAX_RANGE:
        raise LimitExceeded(f"range of {len(result)} items is over the limit of {MAX_RANGE}")
    return result


# The kinds isinstance() knows, by the name an expression uses (each name is a charged function there).
KINDS = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": list,
    "dict": dict,
    "tuple": tuple,
    "set": OrderedSet,
}


def _isinstance_of(kinds: dict[Any, type]) -> Callable[[Any, Any], bool]:
    """isinstance(value, str) and the like, where `str` is the expression's function of that name."""

    def is_instance(value: Any, kind: Any) -> bool:
        wanted = kind if isinstance(kind, tuple) else (kind,)
        charge(len(wanted))  # looked through in Python code
        return isinstance(value, tuple(kinds[k] for k in wanted if k in kinds))

    is_instance.__name__ = "isinstance"
    return is_instance


def _set(items: Any = ()) -> OrderedSet:
    charge_keys(items)  # each member is hashed
    return OrderedSet(items)


def safe_dict(*args: Any, **kwargs: Any) -> dict[Any, Any]:
    """dict(): a dict is copied with its hashes, other pairs are hashed key by key."""
    if args and type(args[0]) is not dict and isinstance(args[0], list | tuple):
        with contextlib.suppress(TypeError, IndexError, KeyError):
            charge_keys(list(map(operator.itemgetter(0), args[0])))
    return dict(*args, **kwargs)


def _compared(items: Any, key: Callable[[Any], Any] | None) -> tuple[list[Any], list[Any]]:
    """The items and the keys sorted, min and max compare: comparing nested values walks them, so the
    keys are walked (and charged) once, and each key function call charges for itself."""
    items = list(items)
    keys = items if key is None else [key(item) for item in items]
    bounded_size(keys)
    return items, keys


def _sorted(items: Any, key: Callable[[Any], Any] | None = None, reverse: bool = False) -> list[Any]:
    items, keys = _compared(items, key)
    charge(int(len(items) * SORT_PER_ELEMENT))
    if key is None:
        return sorted(items, reverse=reverse)
    order = sorted(range(len(items)), key=keys.__getitem__, reverse=reverse)
    return [items[i] for i in order]


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    """min or max, in all their forms: `(items)`, `(a, b, ...)`, `key=` and `default=`."""

    def extreme(*args: Any, key: Callable[[Any], Any] | None = None, **default: Any) -> Any:
        items, keys = _compared(args[0] if len(args) == 1 else args, key)
        if not items:
            if "default" in default:
                return default["default"]
            raise ValueError(f"{pick.__name__}() arg is an empty sequence")
        return items[pick(range(len(items)), key=keys.__getitem__)]

    extreme.__name__ = pick.__name__
    return extreme


def safe_sum(items: Any, start: Any = 0) -> Any:
    """sum(); adding lists (`sum(lists, [])`) copies the total so far at every step, and adding big integers
    goes by their size, so those are charged."""
    if not isinstance(start, list | tuple):
        charge(big_ints_units(items, product=False))
        return sum(items, start)
    items = list(items)
    length, work = len(start), 0
    for item in items:
        length += _size(item)
        work += length
    check_length(length)
    charge(work // COPIES_PER_UNIT)
    return sum(items, start)


# Entries whose cost never depends on their arguments: the only ones left unwrapped (a test checks).
CONSTANT_COST = frozenset({len, bool})


def build_functions(rng: _random.Random, budget: Budget) -> dict[str, Callable[..., Any]]:
    """The functions callable by name in expressions and templates: each charges for what it does."""

    def c(func: Callable[..., Any], per_item: float = C_SPEED) -> Callable[..., Any]:
        return charged(budget, func, per_item)

    functions = {
        "len": len,
        "bool": bool,
        "str": c(safe_str, 0),  # these charge their own work besides the call
        "int": c(safe_int, 0),
        "round": c(safe_round, 0),
        "pow": c(safe_power, 0),
        "divmod": c(safe_divmod, 0),
        "float": c(float),
        "abs": c(abs),
        "list": c(list),
        "dict": c(safe_dict),
        "set": c(_set),
        "tuple": c(tuple),
        "sum": c(safe_sum),
        "min": c(_extreme(min)),
        "max": c(_extreme(max)),
        "any": c(any),
        "all": c(all),
        "sorted": c(_sorted),
        "reversed": c(lambda xs: list(reversed(xs))),
        "enumerate": c(eager(enumerate), PAIRS_PER_ELEMENT),
        "zip": c(eager(zip), PAIRS_PER_ELEMENT),
        "map": c(eager(map), PAIRS_PER_ELEMENT),
        "filter": c(eager(filter), PAIRS_PER_ELEMENT),
        "range": c(safe_range),
        "join": c(safe_join, 0),
        "load_json": c(load_json, 0),  # these four charge by what they read or write
        "dump_json": c(dump_json, 0),
        "load_yaml": c(load_yaml, 0),
        "dump_yaml": c(dump_yaml, 0),
        "search_regex": c(regex.search, 0),
        "match_regex": c(regex.matches, 0),
        "extract_json": c(text_helpers.extract_json, 0),  # these two charge by the text they read
        "chunk_doc": c(text_helpers.chunk_doc, 0),
        "reduce": c(functools.reduce, PAIRS_PER_ELEMENT),  # the function charges for each of its calls
        "random": c(rng.random, 0),
        "choice": c(rng.choice, 0),
        **{name: c(func, 0) for name, func in random_functions(rng).items()},
    }
    kinds = {functions[name]: kind for name, kind in KINDS.items()}
    functions["isinstance"] = c(_isinstance_of(kinds), 0)
    return functions


def is_charged(func: Any) -> bool:
    """Whether `func` was wrapped by `charged` (tests audit every reachable callable with this)."""
    return getattr(func, "mint_charged", False) is True
