"""Jinja templates for prompts, logs and messages, rendered in an immutable sandbox."""

from __future__ import annotations

import functools
import random as _random
from datetime import datetime
from typing import Any

import jinja2
from jinja2 import meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

from workflows.expressions import CONTEXT_NAMES, ExpressionError
from workflows.safe_functions import MAX_STRING_LENGTH, build_functions, build_modules

MAX_TEMPLATE_LENGTH = 100_000


class _Environment(ImmutableSandboxedEnvironment):
    """The sandbox, with dict keys reachable as attributes first (`_.content` means `_["content"]`)."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, dict) and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)


ENVIRONMENT = _Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
_GLOBAL_NAMES = frozenset(build_functions(_random.Random())) | frozenset(
    build_modules(_random.Random(), datetime.now)
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


def render_template(source: str, scope: dict[str, Any]) -> str:
    """Render `source` with `scope` (names plus helper functions); raise ExpressionError on failure."""
    if not is_template(source):
        return source
    template = compile_template(source)
    try:
        text = template.render(scope)
    except jinja2.UndefinedError as exc:
        raise ExpressionError(f"template error: {exc.message}") from None
    except jinja2.sandbox.SecurityError as exc:
        raise ExpressionError(f"template blocked by the sandbox: {exc}") from None
    except Exception as exc:  # user templates: any failure is the user's error
        raise ExpressionError(f"template error: {type(exc).__name__}: {exc}") from None
    if len(text) > MAX_STRING_LENGTH:
        raise ExpressionError(f"template output is longer than {MAX_STRING_LENGTH} characters")
    return text
