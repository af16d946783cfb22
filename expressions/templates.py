"""Jinja templates for prompts, logs and messages, rendered in an immutable sandbox with a work budget.

Jinja's own sandbox stops attribute escapes but not resource attacks, so on top of it: no constant folding
at compile time (the API compiles tenants' templates); every loop iteration charges the execution's Budget
for the body it runs, and calls, comparisons, `~` and the arithmetic operators charge for the sizes they
handle; a template reads only the attributes an expression may (methods.py: data, or methods charged on
every call) and Jinja's loop, group and block objects; every filter and test is charged and size-checked
(template_filters); every printed value is plain data of bounded size, and rendering stops once the output
passes the limit.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import random as _random
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from datetime import datetime
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.filters import _GroupTuple
from jinja2.runtime import BlockReference, LoopContext, Macro, TemplateReference
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer
from markupsafe import Markup

from expressions.budget import (
    CHARS_PER_UNIT,
    MAX_STRING_LENGTH,
    Budget,
    LimitExceeded,
    charge,
    charge_length,
    charging,
    int_arithmetic,
)
from expressions.data import bounded_size, charge_keys, check_length
from expressions.functions import build_functions, safe_dict
from expressions.methods import MISSING, Method, attribute, charge_subscript, constant
from expressions.operators import (
    COMPARISONS,
    safe_add,
    safe_mod,
    safe_mult,
    safe_power,
    safe_str,
    sized_operator,
)
from expressions.parsing import CONTEXT_NAMES, ExpressionError
from expressions.shims import SafeNamespace, build_modules
from expressions.template_filters import (
    REMOVED_FILTERS,
    REPLACED_FILTERS,
    charged_filter,
    charged_test,
    units_of,
)

MAX_TEMPLATE_LENGTH = 100_000
# A call through the sandbox (its checks, the argument handling) costs about this many units; a macro
# call (a new frame of Jinja's runtime, with its context and arguments: 8-20 us measured) more.
CALL_UNITS = 8
MACRO_CALL_UNITS = 40


def _loop(items: Iterable[Any], units: int) -> Iterator[Any]:
    """A `for` loop's iterable: each iteration pays for the body it runs."""
    for item in items:
        charge(units)
        yield item


def _concat(*parts: Any) -> str:
    """`a ~ b`: each part as plain data of bounded size, the total bounded before it is built."""
    texts, length = [], 0
    for part in parts:
        text = part if type(part) is str else safe_str(part)
        length += len(text)
        check_length(length)
        texts.append(text)
    charge(length // CHARS_PER_UNIT)
    return "".join(texts)


def _compare(operators: tuple[str, ...], left: Any, *rights: Any) -> Any:
    """A comparison (`a < b`, `a in b`, chains too), charged for the sizes it compares."""
    result: Any = True
    for name, right in zip(operators, rights, strict=True):
        result = COMPARISONS[name](left, right)
        if not result:
            return result
        left = right
    return result


def _slice_of(value: Any, start: Any, stop: Any, step: Any) -> Any:
    """`value[start:stop:step]`: a copy, charged for its length."""
    bounds = slice(start, stop, step)
    if hasattr(value, "__len__"):
        charge_length(value, len(range(*bounds.indices(len(value)))))
    return value[bounds]


# What `{{ value }}` prints for a null: nothing (`{{ metadata.nickname }}` unset is no "None" in a prompt), or
# "None" for a run recorded before (contracts/executions.py ExecutionParams.null_text).
_NULL_TEXT: ContextVar[str] = ContextVar("null_text", default="")


def _finalize(value: Any) -> Any:
    """Every `{{ value }}` is plain data printed in bounded size (never a function's address)."""
    if value is None:
        return _NULL_TEXT.get()
    if type(value) is str or isinstance(value, jinja2.Undefined):  # printing an Undefined raises its error
        return value
    return safe_str(value)


def _changed(obj: Any, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """loop.changed(value) compares the value with the last one."""
    for value in args:
        bounded_size(value)
    charge(1)


# Jinja's own objects a template may read: the loop variable, groupby's groups, blocks (through `self`).
_RUNTIME_DATA: dict[type, frozenset[str]] = {
    LoopContext: frozenset(
        "index index0 revindex revindex0 first last length depth depth0 previtem nextitem".split()
    ),
    _GroupTuple: frozenset({"grouper", "list"}),
    BlockReference: frozenset({"super"}),
}
_RUNTIME_METHODS = {LoopContext: {"cycle": constant, "changed": _changed}}
# Types that read as another's: Markup (from `tojson`, `safe`, `escape`) is text.
_READ_AS = {Markup: str}


def template_attribute(obj: Any, name: str) -> Any:
    """`obj.name` in a template: what expressions may read (methods.py), plus Jinja's runtime objects;
    MISSING if not allowed."""
    value = attribute(obj, name, _READ_AS.get(type(obj)))
    if value is not MISSING:
        return value
    kind = type(obj)
    if name in _RUNTIME_DATA.get(kind, ()):
        return getattr(obj, name)
    rule = _RUNTIME_METHODS.get(kind, {}).get(name)
    if rule is not None:
        return Method(obj, getattr(kind, name), rule)
    return MISSING


class _Guard(NodeTransformer):
    """Rewrites a parsed template so its work is charged: loops, `~` and comparisons go through helpers."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        if node.recursive:
            raise jinja2.TemplateSyntaxError("recursive loops are not supported", node.lineno)
        self.generic_visit(node)
        body = [*node.body, *([node.test] if node.test else [])]
        units = 1 + sum(1 + sum(1 for _ in part.find_all(nodes.Node)) for part in body)
        node.iter = _helper("mint_loop", [node.iter, nodes.Const(units)], node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _helper("mint_concat", node.nodes, node.lineno)

    def visit_Getitem(self, node: nodes.Getitem) -> nodes.Node:
        self.generic_visit(node)
        if not isinstance(node.arg, nodes.Slice):
            return node
        # Jinja compiles a slice to a plain subscript, past the sandbox's getitem: make it a charged call.
        bounds = [part or nodes.Const(None) for part in (node.arg.start, node.arg.stop, node.arg.step)]
        return _helper("mint_slice", [node.node, *bounds], node.lineno)

    def visit_Compare(self, node: nodes.Compare) -> nodes.Node:
        self.generic_visit(node)
        operators = nodes.Const(tuple(operand.op for operand in node.ops))
        return _helper("mint_compare", [operators, node.expr, *(o.expr for o in node.ops)], node.lineno)

    def visit_Dict(self, node: nodes.Dict) -> nodes.Node:
        self.generic_visit(node)
        pairs = [nodes.Tuple([pair.key, pair.value], "load") for pair in node.items]
        return _helper("mint_dict", pairs, node.lineno)  # its keys are hashed: charged like an expression's


def _helper(name: str, args: list[Any], lineno: int) -> nodes.Call:
    call = nodes.Call(nodes.Name(name, "load"), args, [], None, None)
    return call.set_lineno(lineno)  # type: ignore[return-value]


def _dict_of(*pairs: tuple[Any, Any]) -> dict[Any, Any]:
    """`{key: value, ...}`: the keys checked and charged for hashing, as in an expression."""
    charge_keys([key for key, _ in pairs])
    return dict(pairs)


_HELPERS = {
    "mint_loop": _loop,
    "mint_concat": _concat,
    "mint_compare": _compare,
    "mint_slice": _slice_of,
    "mint_dict": _dict_of,
}


# Operators that cannot make a number much larger than its operands: for floats and word-sized integers
# they cost nothing beyond the call (as in expressions).
_NUMBERS: frozenset[Any] = frozenset({int, float, bool})
_SMALL = 1 << 62
_SMALL_NUMBER_OPERATORS = {"+": operator.add, "-": operator.sub}


class _Environment(ImmutableSandboxedEnvironment):
    # Every operator that can take time with its operands' size goes through a charged version.
    intercepted_binops = frozenset({"*", "**", "%", "+", "-", "/", "//"})

    def __init__(self) -> None:
        super().__init__(
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=True,
            optimized=False,  # no constant folding: `{{ 9**(9**8) }}` must not run at compile time
            finalize=_finalize,
        )
        for name in ("lipsum", "namespace", "cycler", "joiner"):  # unbounded generators and mutable state
            self.globals.pop(name, None)
        self.globals.update(_HELPERS, dict=safe_dict)
        for name in REMOVED_FILTERS:
            self.filters.pop(name, None)
        self.filters.update(REPLACED_FILTERS)
        self.filters = {name: charged_filter(name, func) for name, func in self.filters.items()}
        self.tests = {name: charged_test(name, func) for name, func in self.tests.items()}
        self.binop_table = {
            **self.binop_table,
            "*": safe_mult,
            "**": safe_power,
            "%": safe_mod,
            "+": safe_add,
            "-": sized_operator(operator.sub),
            "/": int_arithmetic(operator.truediv, product=True),
            "//": int_arithmetic(operator.floordiv, product=True),
        }

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        template = _Guard().visit(super()._parse(source, name, filename))
        template.set_environment(self)
        return template  # type: ignore[no-any-return]

    def getattr(self, obj: Any, attribute: str) -> Any:
        """`obj.attribute`: a dict's key, a shim's member, or what template_attribute allows."""
        if isinstance(obj, dict) and attribute in obj:
            return obj[attribute]
        if isinstance(obj, SafeNamespace):
            return obj.get(attribute)
        if isinstance(obj, jinja2.Undefined):
            return super().getattr(obj, attribute)  # raises the undefined value's own error
        if type(obj) is TemplateReference:  # `self.block`
            return super().getitem(obj, attribute)
        value = template_attribute(obj, attribute)
        if value is not MISSING:
            return value
        if not isinstance(obj, dict) and hasattr(type(obj), attribute):
            return self.unsafe_undefined(obj, attribute)
        return self.undefined(obj=obj, name=attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        """`obj[argument]`, charged like an expression's subscript; Jinja falls back to the attribute
        (`x['upper']`, and the attribute getters of map, sort, groupby...), so that goes through getattr."""
        if isinstance(obj, jinja2.Undefined):
            return super().getitem(obj, argument)
        try:
            charge_subscript(obj, argument)
            return obj[argument]
        except (TypeError, LookupError):
            if isinstance(argument, str):
                return self.getattr(obj, argument)
        return self.undefined(obj=obj, name=argument)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        # Reached only past getattr and getitem above (neither calls it): allow what they would.
        return template_attribute(obj, attr) is not MISSING and not callable(value)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - Jinja's form
        if __obj is _loop or __obj is _concat or __obj is _compare or __obj is _slice_of or __obj is _dict_of:
            return __obj(*args)
        base = MACRO_CALL_UNITS if isinstance(__obj, Macro) else CALL_UNITS
        charge(base + len(args) + sum(map(units_of, args)) + sum(map(units_of, kwargs.values())))
        return super().call(__context, __obj, *args, **kwargs)  # a Method or a function charges its own work

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        charge(1)
        if left.__class__ in _NUMBERS and right.__class__ in _NUMBERS and operator in _SMALL_NUMBER_OPERATORS:
            if -_SMALL < left < _SMALL and -_SMALL < right < _SMALL:  # nothing to bound: straight to C
                return _SMALL_NUMBER_OPERATORS[operator](left, right)
        return super().call_binop(context, operator, left, right)


ENVIRONMENT = _Environment()
_PROBE = Budget()
_GLOBAL_NAMES = (
    frozenset(build_functions(_random.Random(), _PROBE))
    | frozenset(build_modules(_random.Random(), datetime.now, _PROBE))
    | frozenset(_HELPERS)
)


@functools.lru_cache(maxsize=5_000)
def compile_template(source: str) -> jinja2.Template:
    """Compile once per distinct template text."""
    if len(source) > MAX_TEMPLATE_LENGTH:
        raise ExpressionError(
            f"template is {len(source)} characters long; the limit is {MAX_TEMPLATE_LENGTH}"
        )
    try:
        return ENVIRONMENT.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ExpressionError(f"template syntax error on line {exc.lineno}: {exc.message}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError("template nests too deeply") from None


def check_template(source: str, extra_names: frozenset[str] = frozenset()) -> list[str]:
    """Return the problems with a template (syntax errors, unknown names); [] if none."""
    try:
        compile_template(source)
        parsed = ENVIRONMENT.parse(source)
    except ExpressionError as exc:
        return [str(exc)]
    unknown = meta.find_undeclared_variables(parsed) - CONTEXT_NAMES - extra_names - _GLOBAL_NAMES
    return [f"unknown name {name!r} in template" for name in sorted(unknown)]


def is_template(text: str) -> bool:
    return "{{" in text or "{%" in text


def render_template(source: str, scope: Mapping[str, object], budget: Budget, null_text: str = "") -> str:
    """Render `source` with `scope` (names plus helpers), charging `budget`, a null printed as `null_text`;
    raise ExpressionError on failure."""
    if not is_template(source):
        return source
    template = compile_template(source)
    try:
        with charging(budget), _printing_null_as(null_text):
            return _render_bounded(template, scope)
    except jinja2.UndefinedError as exc:
        raise ExpressionError(f"template error: {exc.message}") from None
    except jinja2.exceptions.SecurityError as exc:
        raise ExpressionError(f"template blocked by the sandbox: {exc}") from None
    except Exception as exc:  # user templates: any failure is the user's error
        raise ExpressionError(f"template error: {type(exc).__name__}: {exc}") from None


@contextlib.contextmanager
def _printing_null_as(text: str) -> Iterator[None]:
    token = _NULL_TEXT.set(text)
    try:
        yield
    finally:
        _NULL_TEXT.reset(token)


def _render_bounded(template: jinja2.Template, scope: Mapping[str, object]) -> str:
    parts, length = [], 0
    for chunk in template.generate(scope):
        length += len(chunk)
        if length > MAX_STRING_LENGTH:
            raise LimitExceeded(f"template output is longer than {MAX_STRING_LENGTH} characters")
        parts.append(chunk)
    return "".join(parts)
