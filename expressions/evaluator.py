"""The evaluator of sandboxed expressions: simpleeval, with every operator, call, attribute and subscript
charged to the work budget and checked for size, and only plain data in and out (parsing and the static checks
a task gets when it is created are in `expressions.py`)."""

from __future__ import annotations

import ast
import random as _random
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import simpleeval

from expressions.budget import (
    CHARS_PER_UNIT,
    MAX_STRING_LENGTH,
    Budget,
    LimitExceeded,
    charge_length,
    charging,
)
from expressions.data import OrderedSet, charge_key, charge_keys
from expressions.functions import build_functions
from expressions.methods import MATCH, MISSING, attribute, charge_subscript
from expressions.operators import (
    check_format_spec,
    safe_str,
)
from expressions.parsing import (
    CONSTANTS,
    DATA_ROOTS,
    LIVE_ROOTS,
    OPERATORS,
    ExpressionError,
    parse_expression,
)
from expressions.shims import SafeNamespace, build_modules

_NAME, _CONSTANT, _BINOP, _COMPARE = ast.Name, ast.Constant, ast.BinOp, ast.Compare
# Operators that cannot make a number much larger than its operands, and comparisons of numbers: for
# floats and word-sized integers these cost nothing beyond their node.
_NUMBERS: frozenset[Any] = frozenset({int, float, bool})
_SMALL = 1 << 62
_NUMBER_OPERATORS = {
    op: simpleeval.DEFAULT_OPERATORS[op]
    for op in (ast.Add, ast.Sub, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
}
# A call costs more than other nodes (arguments, the function's own checks) whatever its arguments, and so
# does setting up a comprehension or a set.
CALL_UNITS = 4
SETUP_UNITS = 8
_CONTAINERS = frozenset({list, dict})
# (name, whether it holds only data, whether it is a held value of its own): _track reads these every step.
_ROOTS = tuple(
    (name, name in DATA_ROOTS, name in DATA_ROOTS and name != "outputs") for name in DATA_ROOTS | LIVE_ROOTS
)


class Evaluator(simpleeval.EvalWithCompoundTypes):  # type: ignore[misc]  # simpleeval has no types
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
        self._track({})

    def evaluate(self, source: str, names: Mapping[str, object]) -> Any:
        """Evaluate `source` with `names` in scope; raise ExpressionError with a readable message."""
        tree = parse_expression(source)
        self.names = {**CONSTANTS, **self.modules, **names}
        self._track(names)
        try:
            with charging(self.budget):
                return self.eval(source, previously_parsed=tree)
        except ExpressionError as exc:  # raised by our own operators: say which expression, once
            if source in str(exc):
                raise
            raise ExpressionError(f"{exc} (in {source!r})") from None
        except simpleeval.NameNotDefined as exc:
            raise ExpressionError(f"unknown name {exc.name!r} in {source!r}") from None
        except simpleeval.IterableTooLong as exc:  # simpleeval's own size limits
            raise ExpressionError(f"LimitExceeded: {exc} (in {source!r})") from None
        except simpleeval.InvalidExpression as exc:
            raise ExpressionError(f"{exc} (in {source!r})") from None
        except RecursionError:
            raise ExpressionError(f"expression nests too deeply: {source!r}") from None
        except Exception as exc:  # user code: every failure is the user's error, reported, never a crash
            raise ExpressionError(f"{type(exc).__name__}: {exc} (in {source!r})") from None

    def _track(self, names: Mapping[str, object]) -> None:
        """Start noting which lists and dicts are data the execution already holds (see DATA_ROOTS).

        `shared` maps their ids to them: the reference keeps each alive, so no new value of this evaluation
        can take its id. `_holders` adds the live roots, whose members are data although they are not."""
        self.shared: dict[int, Any] = {}
        self._holders: dict[int, Any] = {}
        # id of shared data -> id of the held value it is part of: a step's result passes one part of each
        # held value on free, not `_`, `_.x` and `_.x.x` (which hold the same text) each (values._Measured).
        # The live roots' members, and `outputs`'s (separate step outputs), are held values of their own.
        self.roots: dict[int, int] = {}
        for name, data, root in _ROOTS:
            value = names.get(name)
            if value is None:
                continue
            key = id(value)
            self._holders[key] = value
            if data and (value.__class__ in _CONTAINERS or value.__class__ is str):
                self.shared[key] = value
                if root:
                    self.roots[key] = key

    def _share(self, holder: Any, item: Any) -> Any:
        """`item`, read out of `holder`: noted as shared data when `holder` holds only data (a string too,
        which a step's result may then pass on once without counting it: see values._Measured)."""
        if id(holder) in self._holders:
            kind = item.__class__
            if kind in _CONTAINERS:
                self.shared[id(item)] = item
                self._holders[id(item)] = item
            elif kind is str:
                self.shared[id(item)] = item
            else:
                return item
            self.roots[id(item)] = self.roots.get(id(holder), id(item))
        return item

    # simpleeval hooks -----------------------------------------------------------------------------------

    def _eval(self, node: ast.AST) -> Any:
        # Skips simpleeval's per-node container scan: names hold only data and allow-listed callables,
        # and attribute access below is allow-listed, so nothing forbidden is reachable. The hottest path
        # of the sandbox: the budget is charged inline, and the commonest nodes are evaluated right here
        # (a binary operation or a single comparison; chains go to simpleeval, with the same operators).
        budget = self.budget
        budget.left -= 1
        if budget.left < 0:
            budget.charge(0)  # raises LimitExceeded
        kind = node.__class__
        if kind is _NAME:
            try:
                return self.names[node.id]  # type: ignore[attr-defined]
            except KeyError:
                return self._eval_name(node)  # type: ignore[arg-type]
        if kind is _CONSTANT:
            return node.value  # type: ignore[attr-defined]
        if kind is _BINOP:
            budget.left -= 1  # an operator call besides the node
            op = node.op.__class__  # type: ignore[attr-defined]
            left, right = self._eval(node.left), self._eval(node.right)  # type: ignore[attr-defined]
            if (
                left.__class__ in _NUMBERS
                and right.__class__ in _NUMBERS
                and op in _NUMBER_OPERATORS
                and -_SMALL < left < _SMALL
                and -_SMALL < right < _SMALL
            ):
                return _NUMBER_OPERATORS[op](left, right)  # nothing to bound: straight to C
            return self.operators[op](left, right)
        if kind is _COMPARE and len(node.ops) == 1:  # type: ignore[attr-defined]
            op = node.ops[0].__class__  # type: ignore[attr-defined]
            left, right = self._eval(node.left), self._eval(node.comparators[0])  # type: ignore[attr-defined]
            if (
                left.__class__ in _NUMBERS
                and right.__class__ in _NUMBERS
                and op in _NUMBER_OPERATORS
                and -_SMALL < left < _SMALL
                and -_SMALL < right < _SMALL
            ):
                return _NUMBER_OPERATORS[op](left, right)
            return self.operators[op](left, right)
        try:
            handler = self.nodes[kind]
        except KeyError:
            raise ExpressionError(f"{type(node).__name__} is not supported in expressions") from None
        return handler(node)

    def _eval_name(self, node: ast.Name) -> Any:
        try:
            return self.names[node.id]
        except KeyError:
            pass
        if node.id in self.functions:
            return self.functions[node.id]
        raise simpleeval.NameNotDefined(node.id, self.expr)

    def _eval_call(self, node: ast.Call) -> Any:
        func_node = node.func
        if isinstance(func_node, ast.Name):
            try:
                func = self.functions[func_node.id]
            except KeyError:
                raise simpleeval.FunctionNotDefined(func_node.id, self.expr) from None
        elif isinstance(func_node, ast.Attribute):
            func = self._eval(func_node)
        else:
            raise ExpressionError("only named functions and methods can be called")
        self.budget.charge(CALL_UNITS)
        if func in simpleeval.DISALLOW_FUNCTIONS:
            raise ExpressionError("this function is not allowed")
        args = [self._eval(arg) for arg in node.args]
        if node.keywords:
            return func(*args, **dict(self._eval(keyword) for keyword in node.keywords))
        return func(*args)

    def _eval_list(self, node: ast.List) -> list[Any]:
        result: list[Any] = []
        for item in node.elts:
            if isinstance(item, ast.Starred):  # `[*a, *b]` copies a and b
                value = self._eval(item.value)
                if hasattr(value, "__len__"):
                    charge_length(value, len(value))
                result.extend(value)
            else:
                result.append(self._eval(item))
        return result

    def _eval_dict(self, node: ast.Dict) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:  # `{**a}` copies a
                items = self._eval(value)
                charge_length(items, len(items))
                result.update(items)
            else:
                name = self._eval(key)
                charge_key(name)
                result[name] = self._eval(value)
        return result

    def _eval_tuple(self, node: ast.Tuple) -> tuple[Any, ...]:
        return tuple([self._eval(item) for item in node.elts])

    def _eval_comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.DictComp) -> Any:
        """Comprehensions (a generator expression is evaluated as a list), each iteration charged.

        Loop variables are bound in the names themselves and restored afterwards, so they do not leak
        (simpleeval's own version wraps the name lookup instead, a cost on every name in the body)."""
        result: Any = {} if isinstance(node, ast.DictComp) else []
        self.budget.charge(SETUP_UNITS)
        targets = _targets(node)
        names = self.names
        saved = {name: names[name] for name in targets if name in names}
        try:
            self._generate(node, 0, result)
        finally:
            for name in targets:
                names.pop(name, None)
            names.update(saved)
        return result

    def _generate(
        self, node: ast.ListComp | ast.GeneratorExp | ast.DictComp, index: int, result: Any
    ) -> None:
        generator = node.generators[index]
        last = index + 1 == len(node.generators)
        budget = self.budget
        items = self._eval(generator.iter)
        holder = items if id(items) in self._holders else None
        for item in items:
            self._max_count += 1
            if self._max_count > simpleeval.MAX_COMPREHENSION_LENGTH:
                raise LimitExceeded(
                    f"a comprehension may generate at most {simpleeval.MAX_COMPREHENSION_LENGTH} elements "
                    "(its loops, all together)"
                )
            budget.left -= 1
            if budget.left < 0:
                budget.charge(0)
            if holder is not None:
                self._share(holder, item)
            self._bind(generator.target, item)
            if generator.ifs and not all(self._eval(test) for test in generator.ifs):
                continue
            if not last:
                self._generate(node, index + 1, result)
            elif isinstance(node, ast.DictComp):
                key = self._eval(node.key)
                if key.__class__ is tuple or key.__class__ is int:
                    charge_key(key)
                result[key] = self._eval(node.value)
            else:
                result.append(self._eval(node.elt))

    def _bind(self, target: ast.AST, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.names[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            values = list(value)
            if len(values) != len(target.elts):
                raise ExpressionError(f"cannot unpack {len(values)} values into {len(target.elts)} names")
            for part, item in zip(target.elts, values, strict=True):
                self._bind(part, item)
        else:
            raise ExpressionError(f"cannot assign to {type(target).__name__} in a comprehension")

    def _eval_set(self, node: ast.Set) -> OrderedSet:
        self.budget.charge(SETUP_UNITS)
        items = [self._eval(item) for item in node.elts]
        charge_keys(items)
        return OrderedSet(items)

    def _eval_attribute(self, node: ast.Attribute) -> Any:
        attr = node.attr
        if attr.startswith("_"):
            raise ExpressionError(f"attribute {attr!r} is not allowed")
        obj = self._eval(node.value)
        if isinstance(obj, dict) and attr in obj:
            return self._share(obj, obj[attr])
        if isinstance(obj, SafeNamespace):
            return obj.get(attr)
        value = attribute(obj, attr)  # data, or a method that charges on every call
        if value is not MISSING:
            return value
        if isinstance(obj, dict):
            raise ExpressionError(f"no key {attr!r} (keys: {_preview_keys(obj)})")
        raise ExpressionError(f"attribute .{attr} is not available on {type(obj).__name__}")

    def _eval_subscript(self, node: ast.Subscript) -> Any:
        container = self._eval(node.value)
        key = self._eval(node.slice)
        if type(key) is slice and hasattr(container, "__len__"):  # a slice is a copy
            charge_length(container, len(range(*key.indices(len(container)))))
        elif key.__class__ is tuple or container.__class__ is MATCH:  # a hash walk, or a copy
            charge_subscript(container, key)
        try:
            return self._share(container, container[key])
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
        self.budget.charge(length // CHARS_PER_UNIT)
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


def _targets(node: ast.ListComp | ast.GeneratorExp | ast.DictComp) -> tuple[str, ...]:
    """The names a comprehension binds (noted on the node: parsed trees are cached and reused)."""
    targets = getattr(node, "mint_targets", None)
    if targets is None:
        targets = tuple(
            sorted({n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)})
        )
        node.mint_targets = targets  # type: ignore[union-attr]
    return targets


def _plain(value: Any) -> Any:
    safe_str(value)  # refuses non-data and huge values
    return value


def _preview_keys(obj: dict[Any, Any]) -> str:
    keys = [repr(k) for k in list(obj)[:10]]
    return ", ".join(keys) + (", ..." if len(obj) > 10 else "") if keys else "none"


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return f"dict with keys {_preview_keys(value)}"
    if isinstance(value, list | tuple | str):
        return f"{type(value).__name__} of length {len(value)}"
    return type(value).__name__
