"""Steps inside steps: walking a parsed step's nested steps, and finding them in a raw step."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from workflows.language.steps import STEP_MODEL_BY_KIND, StepModel, step_kind


def walk_steps(steps: Sequence[StepModel], path: str) -> Iterator[tuple[str, StepModel]]:
    """Yield (path, step) for every step, nested ones included, depth first."""
    for i, step in enumerate(steps):
        yield from walk_step(step, f"{path}[{i}]")


def walk_step(step: StepModel, path: str) -> Iterator[tuple[str, StepModel]]:
    """Yield (path, step) for a step and every step nested in it, depth first."""
    yield path, step
    for sub_path, sub_steps in step.nested_steps(path):
        yield from walk_steps(sub_steps, sub_path)


def replace_nested(raw: Any, path: str, replace: Callable[[str, Any], Any]) -> Any:
    """A copy of a raw step with each step list nested in it (see StepModel.NESTED) replaced by
    `replace(its path, its raw value)`; a raw step of no known kind, or of another shape, is returned as is."""
    model = STEP_MODEL_BY_KIND.get(step_kind(raw) or "")
    for where in model.NESTED if model else ():
        raw = _replace_at(raw, where.split("."), path, replace)
    return raw


def _replace_at(value: Any, keys: list[str], path: str, replace: Callable[[str, Any], Any]) -> Any:
    if not keys:
        return replace(path, value)
    key, each = keys[0].removesuffix("[]"), keys[0].endswith("[]")
    if not isinstance(value, dict) or key not in value:
        return value
    inner = value[key]
    if not each:
        return {**value, key: _replace_at(inner, keys[1:], f"{path}.{key}", replace)}
    if not isinstance(inner, list):
        return value
    items = [_replace_at(item, keys[1:], f"{path}.{key}[{i}]", replace) for i, item in enumerate(inner)]
    return {**value, key: items}


# Julep's names for the step kinds whose tag differs in Mint (the `kind_` Julep answers each step with).
JULEP_KINDS = {"tool": "tool_call"}


def with_kinds(steps: Any) -> Any:
    """Steps as Julep answers them: each (nested ones too) with its kind first, `kind_: evaluate`; `then`,
    `else` and `do` may be one step or a list. Anything that is not a step is left as it is."""
    if isinstance(steps, list):
        return [with_kinds(step) for step in steps]
    kind = step_kind(steps)
    if kind is None or not isinstance(steps, dict):
        return steps
    inner = replace_nested(steps, "", lambda _, nested: with_kinds(nested))
    return {"kind_": JULEP_KINDS.get(kind, kind), **{k: v for k, v in inner.items() if k != "kind_"}}
