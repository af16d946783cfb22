"""Validate a task document when it is created: every problem, each with the path where it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from contracts.executions import DEFAULT_MAX_TOOL_TIMEOUT_SECONDS
from workflows import ignored_keys
from workflows import language as lang
from workflows.calls import bounded_timeout
from workflows.dialect import Dialect, read_value
from workflows.input_schema import schema_problems
from workflows.problems import Problem, capped_warnings
from workflows.sandbox.expressions import MAX_EXPRESSION_LENGTH
from workflows.values import check_value, detect_dialect, reading_warnings


class TaskInvalid(Exception):
    """A task document has problems; `problems` lists them all."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(f"{p.path}: {p.message}" for p in problems))


@dataclass(frozen=True)
class TaskLimits:
    """Limits on a task's shape (the API passes MINT_MAX_STEPS, MINT_MAX_EXPRESSION_LENGTH and
    MINT_MAX_TOOL_TIMEOUT_SECONDS)."""

    max_steps: int = 1_000
    max_expression_length: int = MAX_EXPRESSION_LENGTH
    max_tool_timeout: float = DEFAULT_MAX_TOOL_TIMEOUT_SECONDS


@dataclass(frozen=True)
class ValidTask:
    spec: lang.TaskSpec
    dialect: Dialect
    document: dict[str, Any]
    # How each string that could be read either way was read, with its path.
    warnings: list[Problem]


def validate_task(
    raw: Any, agent_tool_names: frozenset[str] = frozenset(), limits: TaskLimits = TaskLimits()
) -> ValidTask:
    """Parse and check a task; raise TaskInvalid listing every problem."""
    if not isinstance(raw, dict):
        raise TaskInvalid([Problem("", "a task must be a mapping with at least `name` and `main`")])
    try:
        spec = lang.TaskSpec.model_validate(raw)
    except ValidationError as exc:
        raise TaskInvalid([_problem(e) for e in exc.errors()]) from None
    _check_step_count(spec, limits.max_steps)
    dialect = detect_dialect(spec.workflows)
    problems = schema_problems(spec.input_schema) + _duplicate_tools(spec.tools)
    warnings: list[Problem] = []
    for i, tool in enumerate(spec.tools):
        problems += tool_timeout_problems(tool, f"tools[{i}]", limits.max_tool_timeout)
        refused, ignored = ignored_keys.api_call_keys(tool.api_call, f"tools[{i}]")
        problems, warnings = problems + refused, warnings + ignored
    tool_names = {t.name for t in spec.tools} | (set(agent_tool_names) if spec.inherit_tools else set())
    labels: dict[str, str] = {}
    api_calls = {t.name for t in spec.tools if t.type == "api_call"}
    for name, steps in spec.workflows.items():
        for path, step in lang.walk_steps(steps, name):
            problems += _check_step(
                step, path, dialect, tool_names, set(spec.workflows), labels, limits.max_expression_length
            )
            problems += _argument_timeout_problems(step, path, dialect, api_calls, limits.max_tool_timeout)
            refused, ignored = ignored_keys.step_keys(step, path)
            problems, warnings = problems + refused, warnings + ignored
    if problems:
        raise TaskInvalid(problems)
    return ValidTask(
        spec, dialect, spec.to_document(), capped_warnings(warnings + task_warnings(spec, dialect))
    )


def task_warnings(spec: lang.TaskSpec, dialect: Dialect) -> list[Problem]:
    """What a valid task's creation answer lists: every string that could be read the other way, with how
    it was read."""
    warnings = []
    for name, steps in spec.workflows.items():
        for path, step in lang.walk_steps(steps, name):
            for field_path, raw, field_kind in step.evaluable_fields(path):
                warnings += [Problem(*w) for w in reading_warnings(raw, field_path, field_kind, dialect)]
    return warnings


def _problem(error: Any) -> Problem:
    loc = tuple(error["loc"])
    if loc == ("workflows",) and "main" in error["msg"]:
        return Problem("main", error["msg"])
    return Problem(format_loc(loc), error["msg"])


def format_loc(loc: tuple[Any, ...]) -> str:
    """Turn a pydantic error location into `main[1].then[0].evaluate`, dropping union tags."""
    parts: list[str] = []
    previous: Any = None
    for item in loc[1:] if loc and loc[0] == "workflows" else loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif isinstance(previous, int) and item in lang.STEP_KINDS:
            pass  # the discriminated union's tag, not a field
        elif "[" in str(item) or item in ("str", "list", "dict"):
            pass  # a union member's description
        else:
            parts.append(f".{item}" if parts else str(item))
        previous = item
    return "".join(parts) or "(task)"


def _check_step_count(spec: lang.TaskSpec, limit: int) -> None:
    """Refuse a task with more than `limit` steps (nested ones included), naming the first step past it;
    checked first, so an oversized task costs no further work."""
    paths = [path for name, steps in spec.workflows.items() for path, _ in lang.walk_steps(steps, name)]
    if len(paths) > limit:
        count, first_over = len(paths), paths[limit]
        message = (
            f"the task has {count} steps (nested ones included); the step limit is {limit} (MINT_MAX_STEPS)"
        )
        raise TaskInvalid([Problem(first_over, message)])


def _check_step(
    step: lang.StepModel,
    path: str,
    dialect: Dialect,
    tools: set[str],
    workflows: set[str],
    labels: dict[str, str],
    max_length: int,
) -> list[Problem]:
    problems = []
    for field_path, raw, kind in step.evaluable_fields(path):
        if kind == "reduce":
            found = check_value(raw, "expression", dialect, frozenset({"results"}), max_length)
        else:
            found = check_value(raw, kind, dialect, max_length=max_length)
        problems += [Problem(field_path, m) for m in found]
    label = getattr(step, "label", None)
    if label is not None:
        if label in labels:
            problems.append(Problem(f"{path}.label", f"label {label!r} is already used at {labels[label]}"))
        labels[label] = path
    known = {"tool": tools, "workflow": workflows}
    for where, what, name in step.references(path):
        if not isinstance(name, str) or name not in known[what]:
            names = ", ".join(sorted(known[what])) or "none"
            problems.append(Problem(where, f"unknown {what} {name!r} ({what}s: {names})"))
    return problems


def tool_timeout_problems(tool: lang.ToolDef, path: str, limit: float) -> list[Problem]:
    """An api_call tool's `timeout` over MINT_MAX_TOOL_TIMEOUT_SECONDS (for task and agent tools alike)."""
    if tool.api_call is None or tool.api_call.timeout is None:
        return []
    try:
        bounded_timeout(tool.api_call.timeout, limit)
    except ValueError as exc:
        return [Problem(f"{path}.api_call.timeout" if path else "api_call.timeout", str(exc))]
    return []


def _argument_timeout_problems(
    step: lang.StepModel, path: str, dialect: Dialect, api_calls: set[str], limit: float
) -> list[Problem]:
    """The `arguments.timeout` of a step calling one of the task's api_call tools, when it is written as a
    literal (a computed one, or one for an agent's tool, is checked when the step runs)."""
    if not isinstance(step, lang.ToolCallStep) or step.tool_name not in api_calls:
        return []
    if not isinstance(step.tool_arguments, dict):
        return []
    raw = step.tool_arguments.get("timeout")
    computed = isinstance(raw, str) and read_value(raw, dialect).how != "text"
    if raw is None or computed:
        return []
    try:
        bounded_timeout(raw, limit)
    except ValueError as exc:
        return [Problem(f"{path}.{step.arguments_path}.timeout", str(exc))]
    return []


def _duplicate_tools(tools: list[lang.ToolDef]) -> list[Problem]:
    seen: dict[str, int] = {}
    problems = []
    for i, tool in enumerate(tools):
        if tool.name in seen:
            problems.append(
                Problem(
                    f"tools[{i}].name", f"tool {tool.name!r} is already defined at tools[{seen[tool.name]}]"
                )
            )
        seen.setdefault(tool.name, i)
    return problems
