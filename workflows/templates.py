"""Jinja templates for prompts, logs and messages, rendered in an immutable sandbox with a work budget.

Jinja's own sandbox stops attribute escapes but not resource attacks, so on top of it: no constant folding
at compile time (the API compiles tenants' templates), every loop iteration, call and `* ** % +` charges the
execution's Budget, filters and string methods that could build huge strings are bounded or removed, and
rendering stops once the output passes the size limit.
"""

from __future__ import annotations

import contextvars
import functools
import random as _random
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

from workflows.expressions import CONTEXT_NAMES, ExpressionError
from workflows.safe_functions import build_functions, safe_join
from workflows.safe_values import (
    MAX_FORMAT_WIDTH,
    MAX_STRING_LENGTH,
    Budget,
    LimitExceeded,
    check_length,
    safe_add,
    safe_mod,
    safe_mult,
    safe_power,
)
from workflows.shims import SafeNamespace, build_modules

MAX_TEMPLATE_LENGTH = 100_000
# The budget of the render in progress (rendering is synchronous, so one at a time per thread of control).
_BUDGET: contextvars.ContextVar[Budget] = contextvars.ContextVar("mint_template_budget")
_UNBOUNDED_STR_METHODS = frozenset(
    {"format", "format_map", "center", "ljust", "rjust", "zfill", "expandtabs"}
)


def _charge(units: int) -> None:
    budget = _BUDGET.get(None)
    if budget is not None:
        budget.charge(units)


def _charged_iter(items: Iterable[Any]) -> Iterator[Any]:
    for item in items:
        _charge(1)
        yield item


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


class _Environment(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "%", "+"})

    def __init__(self) -> None:
        super().__init__(
            undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True, optimized=False
        )  # no constant folding: `{{ 9**(9**8) }}` must not run at compile time
        for name in ("lipsum", "namespace", "cycler", "joiner"):  # unbounded generators and mutable state
            self.globals.pop(name, None)
        self.globals["mint_charged_iter"] = _charged_iter
        self.filters.update(
            center=_center,
            indent=_indent,
            format=lambda text, *args: safe_mod(text, args),
            join=lambda items, separator="": safe_join(separator, map(str, items)),
        )
        self.binop_table = {
            **self.binop_table,
            "*": safe_mult,
            "**": safe_power,
            "%": safe_mod,
            "+": safe_add,
        }

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        # Every `for` loop iterates through mint_charged_iter, so loops over data pay per iteration.
        template = super()._parse(source, name, filename)
        for loop in template.find_all(nodes.For):
            loop.iter = nodes.Call(nodes.Name("mint_charged_iter", "load"), [loop.iter], [], None, None)
        return template

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, dict) and attribute in obj:
            return obj[attribute]
        if isinstance(obj, SafeNamespace):
            return obj.get(attribute)
        if isinstance(obj, str) and attribute in _UNBOUNDED_STR_METHODS:
            # Jinja would hand out a sandboxed str.format, whose widths are still unbounded.
            raise jinja2.sandbox.SecurityError(f"str.{attribute} is not available in templates")
        return super().getattr(obj, attribute)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if isinstance(obj, str) and attr in _UNBOUNDED_STR_METHODS:
            return False
        return super().is_safe_attribute(obj, attr, value)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - Jinja's form
        _charge(1 + sum(len(a) for a in args if isinstance(a, str | list | tuple | dict)))
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _charge(1)
        return super().call_binop(context, operator, left, right)


ENVIRONMENT = _Environment()
_PROBE = Budget()
_GLOBAL_NAMES = frozenset(build_functions(_random.Random(), _PROBE)) | frozenset(
    build_modules(_random.Random(), datetime.now, _PROBE)
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
    token = _BUDGET.set(budget)
    try:
        return _render_bounded(template, scope)
    except jinja2.UndefinedError as exc:
        raise ExpressionError(f"template error: {exc.message}") from None
    except jinja2.sandbox.SecurityError as exc:
        raise ExpressionError(f"template blocked by the sandbox: {exc}") from None
    except Exception as exc:  # user templates: any failure is the user's error
        raise ExpressionError(f"template error: {type(exc).__name__}: {exc}") from None
    finally:
        _BUDGET.reset(token)


def _render_bounded(template: jinja2.Template, scope: dict[str, Any]) -> str:
    parts, length = [], 0
    for chunk in template.generate(scope):
        length += len(chunk)
        if length > MAX_STRING_LENGTH:
            raise LimitExceeded(f"template output is longer than {MAX_STRING_LENGTH} characters")
        parts.append(chunk)
    return "".join(parts)
