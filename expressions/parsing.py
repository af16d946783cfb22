"""Sandboxed Python expressions for the task language, evaluated with simpleeval.

Expressions run inside Temporal workflow code, so they must be deterministic (randomness and time come
from the caller: `workflow.random()` / `workflow.now()`), bounded in work (a shared Budget counts every
operation), and unable to reach anything but plain data and the allow-listed functions.
"""

from __future__ import annotations

import ast
import functools
import random as _random
from datetime import datetime
from typing import Any

import simpleeval

from expressions import fstrings
from expressions.budget import (
    Budget,
    int_arithmetic,
)
from expressions.functions import build_functions
from expressions.operators import (
    COMPARISONS,
    safe_add,
    safe_lshift,
    safe_mod,
    safe_mult,
    safe_power,
    sized_operator,
)
from expressions.shims import SafeNamespace, build_modules
from expressions.unavailable import unavailable

# Characters one expression may have: the default of MINT_MAX_EXPRESSION_LENGTH (checked when a task is
# created), and the ceiling any expression is parsed under (the task size limit keeps tasks well below it).
MAX_EXPRESSION_LENGTH = 10_000
PARSE_CEILING = 1_000_000

# Names every expression may use besides functions and modules.
CONTEXT_NAMES = frozenset(
    {"_", "inputs", "outputs", "steps", "state", "agent", "task", "execution", "metadata"}
)
CONSTANTS = {
    "True": True,
    "False": False,
    "None": None,
    "true": True,
    "false": False,
    "null": None,
    "NEWLINE": "\n",
}
OPERATORS = {
    **simpleeval.DEFAULT_OPERATORS,
    ast.Add: safe_add,
    ast.Mult: safe_mult,
    ast.Pow: safe_power,
    ast.Mod: safe_mod,
    ast.LShift: safe_lshift,
    ast.FloorDiv: int_arithmetic(simpleeval.DEFAULT_OPERATORS[ast.FloorDiv], product=True),
    ast.Div: int_arithmetic(simpleeval.DEFAULT_OPERATORS[ast.Div], product=True),
    ast.RShift: int_arithmetic(simpleeval.DEFAULT_OPERATORS[ast.RShift], product=False),
    # Comparisons and set operations look at every element of a string or collection: charged by size.
    **{
        op: sized_operator(simpleeval.DEFAULT_OPERATORS[op])
        for op in (ast.Sub, ast.BitOr, ast.BitAnd, ast.BitXor)
    },
    ast.Eq: COMPARISONS["eq"],
    ast.NotEq: COMPARISONS["ne"],
    ast.Lt: COMPARISONS["lt"],
    ast.LtE: COMPARISONS["lteq"],
    ast.Gt: COMPARISONS["gt"],
    ast.GtE: COMPARISONS["gteq"],
    ast.In: COMPARISONS["in"],
    ast.NotIn: COMPARISONS["notin"],
}


class ExpressionError(Exception):
    """An expression failed to parse or evaluate; the message says why, for the user."""


@functools.lru_cache(maxsize=20_000)
def parse_expression(source: str) -> ast.AST:
    """Parse one expression (cached: the same task text is evaluated many times)."""
    if len(source) > PARSE_CEILING:
        raise ExpressionError(f"expression is {len(source)} characters long; the limit is {PARSE_CEILING}")
    text = source.strip()
    if not text:
        raise ExpressionError("empty expression")
    try:
        return fstrings.parse(text)  # Python's own parser, and Python 3.12's f-strings on any Python
    except SyntaxError as exc:
        raise ExpressionError(f"syntax error in expression {source!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"expression nests too deeply: {source[:100]!r}") from None


# Names whose values are plain data already (the interpreter keeps only converted values): an expression
# that just reads one of them or a part of one (`_`, `steps[0].output.items`) gives its value as is instead
# of a copy. A live container the interpreter keeps adding to (`inputs`, `state`) is copied even so, or a
# step's output could come to contain itself. The Evaluator tracks the same thing as it runs (its `shared`),
# so a result that holds such parts (`{'items': _.json.items}`) is not copied either.
DATA_ROOTS = frozenset({"_", "outputs", "agent", "task", "execution", "metadata"})
LIVE_ROOTS = frozenset({"inputs", "state", "steps"})


@functools.lru_cache(maxsize=20_000)
def reads_data(source: str) -> bool:
    """Whether `source` only reads a context name or a part of it (see DATA_ROOTS)."""
    node, depth = parse_expression(source), 0
    while isinstance(node, ast.Subscript | ast.Attribute):
        node, depth = node.value, depth + 1
    return isinstance(node, ast.Name) and (node.id in DATA_ROOTS or (node.id in LIVE_ROOTS and depth > 0))


def check_expression(
    source: str, extra_names: frozenset[str] = frozenset(), max_length: int = MAX_EXPRESSION_LENGTH
) -> list[str]:
    """Return the problems with an expression (length, syntax, unsupported syntax, unknown names); [] if none."""
    if len(source) > max_length:
        return [
            f"expression is {len(source)} characters long; the expression length limit is {max_length} "
            "(MINT_MAX_EXPRESSION_LENGTH)"
        ]
    try:
        tree = parse_expression(source)
    except ExpressionError as exc:
        return [str(exc)]
    known = CONTEXT_NAMES | extra_names | KNOWN_NAMES
    bound = _comprehension_targets(tree)
    problems = []
    for node in ast.walk(tree):
        kind = type(node)
        if kind not in SUPPORTED_NODES:
            problems.append(f"{kind.__name__} is not supported in expressions")
        elif isinstance(node, ast.Name) and node.id not in known and node.id not in bound:
            problems.append(unavailable(node.id) or f"unknown name {node.id!r}")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            problems.append(f"attribute {node.attr!r} is not allowed")
        elif isinstance(node, ast.Attribute) and (missing := _missing_member(node, known - bound)):
            problems.append(missing)
    return sorted(set(problems))


def _missing_member(node: ast.Attribute, modules: frozenset[str]) -> str | None:
    """The problem with `module.member` (`csv.Sniffer`, `math.foo`) if the module shim has no such member."""
    path: list[str] = []
    value: ast.expr = node
    while isinstance(value, ast.Attribute):
        path.insert(0, value.attr)
        value = value.value
    if not isinstance(value, ast.Name) or value.id not in _MODULES or value.id not in modules:
        return None
    member: Any = _MODULES[value.id]
    for depth, name in enumerate(path):
        if not isinstance(member, SafeNamespace):
            return None  # a value's attribute (`datetime.now().year`), checked when it runs
        try:
            member = member.get(name)
        except AttributeError:
            dotted = ".".join([value.id, *path[: depth + 1]])
            return unavailable(dotted) or f"{dotted} is not available"
    return None


def _comprehension_targets(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension):
            names.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    return names


SUPPORTED_NODES = frozenset({
    ast.Name, ast.Constant, ast.UnaryOp, ast.BinOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
    ast.keyword, ast.Subscript, ast.Attribute, ast.Slice, ast.JoinedStr, ast.FormattedValue,
    ast.Dict, ast.Tuple, ast.List, ast.Set, ast.ListComp, ast.GeneratorExp, ast.DictComp,
    ast.comprehension, ast.Starred, ast.Load, ast.Store,
    # operators
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift,
    ast.BitOr, ast.BitXor, ast.BitAnd, ast.Invert, ast.Not, ast.UAdd, ast.USub, ast.And, ast.Or,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.Is, ast.IsNot,
})  # fmt: skip

_PROBE = Budget()
_MODULES = build_modules(_random.Random(), datetime.now, _PROBE)
KNOWN_NAMES = (
    frozenset(CONSTANTS) | frozenset(build_functions(_random.Random(), _PROBE)) | frozenset(_MODULES)
)
