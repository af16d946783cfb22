"""Steps inside steps, as each step kind declares them (StepModel.NESTED): the walk over a parsed task's steps,
with each step's path as written and as it runs, and the nested step lists of a raw step."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from workflows.language.steps import STEP_MODEL_BY_KIND, StepModel, step_kind


@dataclass(frozen=True)
class PlacedStep:
    """A step with where it is. `path`: in the task as written (`main[2].switch[1].then[0]`), the path
    problems and warnings name; `workflow` and `index`: where the interpreter runs it (`main[2].switch[1]`
    and 0), as a transition's `current` records it; `parent`: the step it is nested in, if any."""

    path: str
    workflow: str
    index: int
    step: StepModel
    parent: PlacedStep | None = None

    @property
    def runtime(self) -> str:
        """The step's path as the interpreter names it (`main[2].switch[1][0]`)."""
        return f"{self.workflow}[{self.index}]"


@dataclass(frozen=True)
class StepList:
    """A list of steps nested in a step, with its path in the task as written and the one it runs under."""

    path: str
    runtime: str
    steps: Sequence[StepModel]


def walk_steps(steps: Sequence[StepModel], path: str) -> Iterator[PlacedStep]:
    """Every step of a workflow (`path`: its name) or of a fan-out's body, nested ones included, depth
    first."""
    return _walk(steps, path, path, None)


def _walk(
    steps: Sequence[StepModel], path: str, runtime: str, parent: PlacedStep | None
) -> Iterator[PlacedStep]:
    for i, step in enumerate(steps):
        placed = PlacedStep(f"{path}[{i}]", runtime, i, step, parent)
        yield placed
        for nested in nested_steps(step, placed.path, placed.runtime):
            yield from _walk(nested.steps, nested.path, nested.runtime, placed)


def nested_steps(step: StepModel, path: str, runtime: str) -> Iterator[StepList]:
    """The step lists in a parsed step (see StepModel.NESTED), under the step's `path` and `runtime` path."""
    for nesting in step.NESTED:
        for indices, steps in _lists_at(step, nesting.source.split(".")):
            yield StepList(
                path + _placed(nesting.source, indices), runtime + _placed(nesting.runtime, indices), steps
            )


def _lists_at(value: object, keys: list[str]) -> Iterator[tuple[tuple[int, ...], list[StepModel]]]:
    """The step lists at `keys` in a parsed model, with the index of each list item passed on the way."""
    if not keys:
        if isinstance(value, list):
            yield (), value
        return
    key, each = keys[0].removesuffix("[]"), keys[0].endswith("[]")
    inner = _field(value, key)
    if not each:
        yield from _lists_at(inner, keys[1:])
        return
    for i, item in enumerate(inner if isinstance(inner, list) else []):
        for indices, steps in _lists_at(item, keys[1:]):
            yield (i, *indices), steps


def _field(model: object, key: str) -> object:
    """A parsed model's field by the key users write (`else`, not `else_`); None when it has none."""
    if not isinstance(model, BaseModel):
        return None
    name = _field_names(type(model)).get(key)
    return None if name is None else getattr(model, name)


@functools.cache
def _field_names(model: type[BaseModel]) -> dict[str, str]:
    return {field.alias or name: name for name, field in model.model_fields.items()}


def _placed(pattern: str, indices: tuple[int, ...]) -> str:
    """A Nesting pattern with its list indices in place: `switch[].then` and (1,) is `.switch[1].then`."""
    head, *rest = pattern.split("[]")
    return "." + head + "".join(f"[{i}]{piece}" for i, piece in zip(indices, rest, strict=False))


def replace_nested(raw: Any, path: str, replace: Callable[[str, Any], Any]) -> Any:
    """A copy of a raw step with each step list nested in it (see StepModel.NESTED) replaced by
    `replace(its path, its raw value)`; a raw step of no known kind, or of another shape, is returned as is."""
    model = STEP_MODEL_BY_KIND.get(step_kind(raw) or "")
    for nesting in model.NESTED if model else ():
        raw = _replace_at(raw, nesting.source.split("."), path, replace)
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
