"""Jinja templates for prompts, logs and messages, rendered in an immutable sandbox with a work budget.

Jinja's own sandbox stops attribute escapes but not resource attacks, so on top of it: no constant folding
at compile time (the API compiles tenants' templates); every loop iteration charges the execution's Budget
for the body it runs, and calls, filters, tests, comparisons, `~` and `* ** % +` charge for the sizes
they handle; filters and string methods that could build huge strings are bounded, replaced or removed;
every printed value is plain data of bounded size, and rendering stops once the output passes the limit.
"""

from __future__ import annotations

import functools
import random as _random
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

from workflows.expressions import CONTEXT_NAMES, ExpressionError
from workflows.safe_functions import STR_METHOD_WRAPPERS, build_functions, dump_json, method_units
from workflows.safe_values import (
    CHARS_PER_UNIT,
    COMPARISONS,
    ELEMENTS_PER_UNIT,
    MAX_FORMAT_WIDTH,
    MAX_RANGE,
    MAX_STRING_LENGTH,
    SCANS_PER_UNIT,
    Budget,
    LimitExceeded,
    OrderedSet,
    bounded_size,
    charge,
    charge_length,
    charging,
    check_length,
    safe_add,
    safe_mod,
    safe_mult,
    safe_power,
    safe_round,
    safe_str,
)
from workflows.shims import SafeNamespace, build_modules

MAX_TEMPLATE_LENGTH = 100_000
_UNBOUNDED_STR_METHODS = frozenset(
    {"format", "format_map", "center", "ljust", "rjust", "zfill", "expandtabs", "translate"}
)
# A call through the sandbox (its checks, the argument handling) costs about this many units; a macro
# call (a new frame of Jinja's runtime) more.
CALL_UNITS = 8
MACRO_CALL_UNITS = 24
FILTER_UNITS = 3
# Filters that walk their input in Python code, in units per element (a string argument counts per
# character at a quarter of that): some call another filter or test, or a key function, per element.
_ITERATING_FILTERS = {
    **dict.fromkeys(["batch", "items", "list", "max", "min", "random", "reverse", "slice", "sum"], 1),
    **dict.fromkeys(["unique", "xmlattr"], 2),
    **dict.fromkeys(["dictsort", "groupby", "join", "sort"], 3),
    **dict.fromkeys(["map", "reject", "rejectattr", "select", "selectattr"], 6),
}
_PYTHON_TEXT_FILTERS = {"wordwrap": 2, "urlize": 2}  # units per character: textwrap and regexes in Python


def _units(value: Any, per_element: float = 1 / SCANS_PER_UNIT) -> int:
    """What handling `value` costs: strings per CHARS_PER_UNIT characters, collections per element."""
    if isinstance(value, str):
        return len(value) // CHARS_PER_UNIT
    if isinstance(value, list | tuple | dict | OrderedSet | range):
        return int(len(value) * per_element)
    return 0


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


def _finalize(value: Any) -> Any:
    """Every `{{ value }}` is plain data printed in bounded size (never a function's address)."""
    if type(value) is str or isinstance(value, jinja2.Undefined):  # printing an Undefined raises its error
        return value
    return safe_str(value)


def _center(text: str, width: int = 80) -> str:
    if width > MAX_FORMAT_WIDTH:
        raise LimitExceeded(f"center width {width} is over {MAX_FORMAT_WIDTH}")
    return str(text).center(width)


def _indent(text: str, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    if not isinstance(width, str) and int(width) > MAX_FORMAT_WIDTH:
        raise LimitExceeded(f"indent width {width} is over {MAX_FORMAT_WIDTH}")
    pad = width if isinstance(width, str) else " " * int(width)
    check_length(len(text) + len(pad) * (text.count("\n") + 1))
    return jinja2.filters.do_indent(text, pad, first, blank)


def _join(items: Iterable[Any], separator: str = "", attribute: Any = None) -> str:
    if attribute is not None:
        raise LimitExceeded("join(attribute=...) is not supported; map the attribute first")
    return _concat(*_interleave(items, separator))


def _interleave(items: Iterable[Any], separator: str) -> Iterator[Any]:
    for i, item in enumerate(items):
        if i:
            yield separator
        yield item


def _replace(text: str, old: str, new: str, count: int | None = None) -> str:
    return STR_METHOD_WRAPPERS["replace"](str(text))(old, new, -1 if count is None else count)


def _round(value: Any, precision: int = 0, method: str = "common") -> Any:
    if abs(precision) > MAX_FORMAT_WIDTH:
        raise LimitExceeded(f"round to {precision} digits is over the limit of {MAX_FORMAT_WIDTH}")
    if method == "common":
        return safe_round(value, precision)
    return jinja2.filters.do_round(value, precision, method)  # type: ignore[arg-type]


def _batch(items: Iterable[Any], count: int, fill_with: Any = None) -> Any:
    if count > MAX_RANGE:
        raise LimitExceeded(f"batch of {count} is over the limit of {MAX_RANGE}")
    charge(count // ELEMENTS_PER_UNIT if fill_with is not None else 0)
    return jinja2.filters.do_batch(items, count, fill_with)


def _slice(items: Any, count: int, fill_with: Any = None) -> Any:
    if count > MAX_RANGE:
        raise LimitExceeded(f"slice into {count} is over the limit of {MAX_RANGE}")
    charge(count)
    return jinja2.filters.sync_do_slice(items, count, fill_with)


def _tojson(value: Any, indent: int | None = None) -> Any:
    dumps = functools.partial(dump_json, indent=indent, sort_keys=True, ensure_ascii=True)
    return jinja2.utils.htmlsafe_json_dumps(value, dumps=lambda v, **_: dumps(v))


def _pprint(value: Any) -> str:
    charge(bounded_size(value) * 3)  # pprint formats in Python code
    return jinja2.filters.do_pprint(value)


def _charged_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that charges for its arguments first (the values it reads) and then runs as is."""
    per_element = _ITERATING_FILTERS.get(name, 1 / SCANS_PER_UNIT)
    per_char = _PYTHON_TEXT_FILTERS.get(name, per_element / 4 if name in _ITERATING_FILTERS else 0)

    @functools.wraps(func)  # keeps Jinja's pass_context/pass_environment mark
    def charged(*args: Any, **kwargs: Any) -> Any:
        units = FILTER_UNITS
        for arg in args:
            units += (
                int(len(arg) * per_char) if per_char and isinstance(arg, str) else _units(arg, per_element)
            )
        charge(units)
        return func(*args, **kwargs)

    return charged


_COMPARING_TESTS = frozenset(
    {
        "in",
        "eq",
        "equalto",
        "==",
        "ne",
        "!=",
        "lt",
        "lessthan",
        "<",
        "le",
        "<=",
        "gt",
        "greaterthan",
        ">",
        "ge",
        ">=",
    }
)


def _charged_test(name: str, func: Any) -> Callable[..., Any]:
    comparing = name in _COMPARING_TESTS

    @functools.wraps(func)
    def charged(*args: Any, **kwargs: Any) -> Any:
        units = 1
        for arg in args:
            if comparing and isinstance(arg, list | tuple | dict):
                bounded_size(arg)  # `x is in items` compares inside elements too: charged by the walk
            else:
                units += _units(arg)
        charge(units)
        return func(*args, **kwargs)

    return charged


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


def _helper(name: str, args: list[Any], lineno: int) -> nodes.Call:
    call = nodes.Call(nodes.Name(name, "load"), args, [], None, None)
    return call.set_lineno(lineno)  # type: ignore[return-value]


_HELPERS = {"mint_loop": _loop, "mint_concat": _concat, "mint_compare": _compare, "mint_slice": _slice_of}


class _Environment(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "%", "+"})

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
        # Its randomness is Python's own, which a replay would not repeat; `random.choice(xs)` uses Temporal's.
        self.filters.pop("random", None)
        self.globals.update(_HELPERS)
        self.filters.update(
            center=_center,
            indent=_indent,
            format=lambda text, *args: safe_mod(text, args),
            join=_join,
            replace=_replace,
            round=_round,
            batch=_batch,
            slice=_slice,
            tojson=_tojson,
            pprint=_pprint,
            string=safe_str,
        )
        self.filters = {name: _charged_filter(name, func) for name, func in self.filters.items()}
        self.tests = {name: _charged_test(name, func) for name, func in self.tests.items()}
        self.binop_table = {
            **self.binop_table,
            "*": safe_mult,
            "**": safe_power,
            "%": safe_mod,
            "+": safe_add,
        }

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        template = _Guard().visit(super()._parse(source, name, filename))
        template.set_environment(self)
        return template  # type: ignore[no-any-return]

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, dict) and attribute in obj:
            return obj[attribute]
        if isinstance(obj, SafeNamespace):
            return obj.get(attribute)
        if isinstance(obj, str) and attribute in _UNBOUNDED_STR_METHODS:
            # Jinja would hand out a sandboxed str.format, whose widths are still unbounded.
            raise jinja2.sandbox.SecurityError(f"str.{attribute} is not available in templates")
        if isinstance(obj, str) and attribute in STR_METHOD_WRAPPERS:
            return STR_METHOD_WRAPPERS[attribute](obj)  # bounded join and replace
        return super().getattr(obj, attribute)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        # Also reached past getattr above (`x['replace']`, `map(attribute='join')`): the raw join and
        # replace build unbounded strings, so only the wrapped ones getattr hands out are safe.
        if isinstance(obj, str) and (attr in _UNBOUNDED_STR_METHODS or attr in STR_METHOD_WRAPPERS):
            return False
        return super().is_safe_attribute(obj, attr, value)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - Jinja's form
        if __obj is _loop or __obj is _concat or __obj is _compare or __obj is _slice_of:
            return __obj(*args)
        owner = getattr(__obj, "__self__", None)
        base = MACRO_CALL_UNITS if isinstance(__obj, jinja2.runtime.Macro) else CALL_UNITS
        units = base + len(args) + sum(_units(a) for a in args) + sum(_units(v) for v in kwargs.values())
        charge(units + (method_units(owner, getattr(__obj, "__name__", "")) if owner is not None else 0))
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        charge(1)
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


def render_template(source: str, scope: dict[str, Any], budget: Budget) -> str:
    """Render `source` with `scope` (names plus helpers), charging `budget`; raise ExpressionError on failure."""
    if not is_template(source):
        return source
    template = compile_template(source)
    try:
        with charging(budget):
            return _render_bounded(template, scope)
    except jinja2.UndefinedError as exc:
        raise ExpressionError(f"template error: {exc.message}") from None
    except jinja2.sandbox.SecurityError as exc:
        raise ExpressionError(f"template blocked by the sandbox: {exc}") from None
    except Exception as exc:  # user templates: any failure is the user's error
        raise ExpressionError(f"template error: {type(exc).__name__}: {exc}") from None


def _render_bounded(template: jinja2.Template, scope: dict[str, Any]) -> str:
    parts, length = [], 0
    for chunk in template.generate(scope):
        length += len(chunk)
        if length > MAX_STRING_LENGTH:
            raise LimitExceeded(f"template output is longer than {MAX_STRING_LENGTH} characters")
        parts.append(chunk)
    return "".join(parts)
