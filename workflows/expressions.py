"""Sandboxed Python expressions for the task language, evaluated with simpleeval.

Expressions run inside Temporal workflow code, so they must be deterministic (randomness and time come
from the caller: `workflow.random()` / `workflow.now()`), bounded in work (a shared Budget counts every
operation), and unable to reach anything but plain data and the allow-listed functions.
"""

from __future__ import annotations

import ast
import functools
import random as _random
from collections.abc import Callable
from datetime import datetime
from typing import Any

import simpleeval

from workflows.safe_functions import ATTRIBUTE_ALLOW_LIST, STR_METHOD_WRAPPERS, build_functions
from workflows.safe_values import (
    MAX_STRING_LENGTH,
    Budget,
    OrderedSet,
    check_format_spec,
    safe_add,
    safe_lshift,
    safe_mod,
    safe_mult,
    safe_power,
    safe_str,
)
from workflows.shims import SafeNamespace, build_modules

MAX_EXPRESSION_LENGTH = 10_000

# Names every expression may use besides functions and modules.
CONTEXT_NAMES = frozenset({"_", "inputs", "outputs", "steps", "state", "agent", "task", "execution"})
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
}


class ExpressionError(Exception):
    """An expression failed to parse or evaluate; the message says why, for the user."""


@functools.lru_cache(maxsize=20_000)
def parse_expression(source: str) -> ast.AST:
    """Parse one expression (cached: the same task text is evaluated many times)."""
    if len(source) > MAX_EXPRESSION_LENGTH:
        raise ExpressionError(
            f"expression is {len(source)} characters long; the limit is {MAX_EXPRESSION_LENGTH}"
        )
    text = source.strip()
    if not text:
        raise ExpressionError("empty expression")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"syntax error in expression {source!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"expression nests too deeply: {source[:100]!r}") from None
    return tree.body


def check_expression(source: str, extra_names: frozenset[str] = frozenset()) -> list[str]:
    """Return the problems with an expression (syntax, unsupported syntax, unknown names); [] if none."""
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
            problems.append(f"unknown name {node.id!r}")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            problems.append(f"attribute {node.attr!r} is not allowed")
    return sorted(set(problems))


def _comprehension_targets(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension):
            names.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    return names


class Evaluator(simpleeval.EvalWithCompoundTypes):
    """One evaluator per workflow run; `evaluate` is called once per expression."""

    def __init__(
        self,
        rng: _random.Random | None = None,
        now: Callable[[], datetime] | None = None,
        budget: Budget | None = None,
    ):
        rng = rng or _random.Random()
        self.budget = budget or Budget()
        functions = build_functions(rng, self.budget)
        super().__init__(operators=OPERATORS, functions=dict(functions))
        self.functions.update(functions)  # simpleeval adds its own list/tuple/dict/set; ours are charged
        self.modules = build_modules(rng, now or datetime.now, self.budget)

    def evaluate(self, source: str, names: dict[str, Any]) -> Any:
        """Evaluate `source` with `names` in scope; raise ExpressionError with a readable message."""
        tree = parse_expression(source)
        self.names = {**CONSTANTS, **self.modules, **names}
        try:
            return self.eval(source, previously_parsed=tree)
        except ExpressionError:
            raise
        except simpleeval.NameNotDefined as exc:
            raise ExpressionError(f"unknown name {exc.name!r} in {source!r}") from None
        except simpleeval.InvalidExpression as exc:
            raise ExpressionError(f"{exc} (in {source!r})") from None
        except RecursionError:
            raise ExpressionError(f"expression nests too deeply: {source!r}") from None
        except Exception as exc:  # user code: every failure is the user's error, reported, never a crash
            raise ExpressionError(f"{type(exc).__name__}: {exc} (in {source!r})") from None

    # simpleeval hooks -----------------------------------------------------------------------------------

    def _eval(self, node: ast.AST) -> Any:
        # Skips simpleeval's per-node container scan: names hold only data and allow-listed callables,
        # and attribute access below is allow-listed, so nothing forbidden is reachable.
        self.budget.charge(1)
        try:
            handler = self.nodes[type(node)]
        except KeyError:
            raise ExpressionError(f"{type(node).__name__} is not supported in expressions") from None
        return handler(node)

    def _eval_set(self, node: ast.Set) -> OrderedSet:
        return OrderedSet(self._eval(item) for item in node.elts)

    def _eval_attribute(self, node: ast.Attribute) -> Any:
        attr = node.attr
        if attr.startswith("_"):
            raise ExpressionError(f"attribute {attr!r} is not allowed")
        obj = self._eval(node.value)
        if isinstance(obj, dict):
            if attr in obj:
                return obj[attr]
            if attr in ATTRIBUTE_ALLOW_LIST[dict]:
                return _dict_method(obj, attr)
            raise ExpressionError(f"no key {attr!r} (keys: {_preview_keys(obj)})")
        if isinstance(obj, SafeNamespace):
            return obj.get(attr)
        if type(obj) is str and attr in STR_METHOD_WRAPPERS:
            return STR_METHOD_WRAPPERS[attr](obj)
        if attr in ATTRIBUTE_ALLOW_LIST.get(type(obj), frozenset()):
            return getattr(obj, attr)
        raise ExpressionError(f"attribute .{attr} is not available on {type(obj).__name__}")

    def _eval_subscript(self, node: ast.Subscript) -> Any:
        container = self._eval(node.value)
        key = self._eval(node.slice)
        try:
            return container[key]
        except (KeyError, IndexError):
            raise ExpressionError(f"no item {key!r} in {_describe(container)}") from None
        except TypeError:
            raise ExpressionError(f"cannot index {_describe(container)} with {key!r}") from None

    def _eval_joinedstr(self, node: ast.JoinedStr) -> str:
        parts = []
        length = 0
        for value in node.values:
            text = self._eval(value)
            text = text if isinstance(text, str) else safe_str(text)
            length += len(text)
            if length > MAX_STRING_LENGTH:
                raise ExpressionError(f"string longer than {MAX_STRING_LENGTH} characters")
            parts.append(text)
        return "".join(parts)

    def _eval_formattedvalue(self, node: ast.FormattedValue) -> str:
        value = self._eval(node.value)
        if node.conversion == ord("r"):
            value = repr(_plain(value))
        elif node.conversion in (ord("s"), ord("a")):
            value = safe_str(value)
        if node.format_spec is None:
            return value if isinstance(value, str) else safe_str(value)
        spec = self._eval(node.format_spec)
        check_format_spec(spec)
        return format(_plain(value), spec)


def _plain(value: Any) -> Any:
    safe_str(value)  # refuses non-data and huge values
    return value


def _dict_method(obj: dict[str, Any], name: str) -> Callable[..., Any]:
    """dict.keys()/values()/items() as lists (views are not data); dict.get as is."""
    if name == "get":
        return obj.get
    return lambda: list(getattr(obj, name)())


def _preview_keys(obj: dict) -> str:
    keys = [repr(k) for k in list(obj)[:10]]
    return ", ".join(keys) + (", ..." if len(obj) > 10 else "") if keys else "none"


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return f"dict with keys {_preview_keys(value)}"
    if isinstance(value, list | tuple | str):
        return f"{type(value).__name__} of length {len(value)}"
    return type(value).__name__


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
KNOWN_NAMES = (
    frozenset(CONSTANTS)
    | frozenset(build_functions(_random.Random(), _PROBE))
    | frozenset(build_modules(_random.Random(), datetime.now, _PROBE))
)
