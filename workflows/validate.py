"""Validate a task document when it is created: every problem in one answer, structural and semantic, each
with the path where it is and, for an unknown key or name, the closest valid one."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from contracts.executions import DEFAULT_MAX_TOOL_TIMEOUT_SECONDS
from contracts.json import JsonObject
from expressions.parsing import CONTEXT_NAMES, KNOWN_NAMES, MAX_EXPRESSION_LENGTH
from workflows import ignored_keys
from workflows import language as lang
from workflows.calls import bounded_timeout
from workflows.dialect import Dialect, has_dollar, read_value
from workflows.guardrails import guardrail_problems
from workflows.input_schema import schema_problems
from workflows.integrations import argument_problems
from workflows.part_checks import metadata_problems, retry_problems, step_part_problems
from workflows.partial_parse import TaskParts, parse_task
from workflows.plain_errors import format_loc
from workflows.problems import Problem, Suggestions, capped_warnings, in_path_order
from workflows.references import setting_problems
from workflows.values import check_value, reading_warnings

__all__ = ["TaskInvalid", "TaskLimits", "ValidTask", "format_loc", "task_warnings", "validate_task"]


class TaskInvalid(Exception):
    """A task document has problems; `problems` lists them all, in path order."""

    def __init__(self, problems: list[Problem]):
        self.problems = in_path_order(problems)
        super().__init__("; ".join(f"{p.path}: {p.message}" for p in self.problems))


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
    document: JsonObject
    # How each string that could be read either way was read, with its path.
    warnings: list[Problem]


def validate_task(
    raw: Any, agent_tool_names: frozenset[str] = frozenset(), limits: TaskLimits = TaskLimits()
) -> ValidTask:
    """Parse and check a task; raise TaskInvalid listing every problem, structural and semantic, in path
    order. Parts that parse are checked in full even when others do not (workflows/partial_parse.py)."""
    if not isinstance(raw, dict):
        raise TaskInvalid([Problem("", "a task must be a mapping with at least `name` and `main`")])
    suggest = Suggestions()  # the closest valid key or name, for this document's first unknown ones
    parts = parse_task(raw, suggest)
    _check_step_count(parts, limits.max_steps)
    dialect = _dialect(parts.steps)
    problems = parts.problems + schema_problems(parts.input_schema) + _duplicate_tools(parts.tools)
    warnings: list[Problem] = []
    for path, tool in parts.tools:
        problems += tool_timeout_problems(tool, path, limits.max_tool_timeout)
        refused, ignored = ignored_keys.api_call_keys(tool.api_call, path, suggest)
        problems, warnings = problems + refused, warnings + ignored
    names = {
        "tool": parts.tool_names | (set(agent_tool_names) if parts.inherit_tools else set()),
        "workflow": parts.workflow_names,
    }
    check_step = _StepChecks(dialect, names, limits.max_expression_length, suggest)
    api_calls = {tool.name for _, tool in parts.tools if tool.type == "api_call"}
    integrations = {
        t.name: t.integration for _, t in parts.tools if t.type == "integration" and t.integration
    }
    for path, step in parts.steps:
        problems += check_step(step, path)
        problems += _argument_timeout_problems(step, path, dialect, api_calls, limits.max_tool_timeout)
        problems += _integration_argument_problems(step, path, integrations)
        problems += step_part_problems(step, path, suggest)
        refused, ignored = ignored_keys.step_keys(step, path, suggest)
        problems, warnings = problems + refused, warnings + ignored
    problems += metadata_problems(raw.get("metadata"), "metadata")
    if parts.spec is not None:
        problems += guardrail_problems(parts.spec.guardrails, "guardrails", dialect)
        defaults = parts.spec.defaults
        problems += retry_problems(defaults.retry if defaults else None, "defaults.retry", suggest)
    if problems or parts.spec is None:
        raise TaskInvalid(problems)
    spec = parts.spec
    return ValidTask(
        spec, dialect, spec.to_document(), capped_warnings(warnings + task_warnings(spec, dialect))
    )


def task_warnings(spec: lang.TaskSpec, dialect: Dialect) -> list[Problem]:
    """What a valid task's creation answer lists: every string that could be read the other way, with how
    it was read."""
    warnings = []
    for name, steps in spec.workflows.items():
        for placed in lang.walk_steps(steps, name):
            for field_path, raw, field_kind in placed.step.evaluable_fields(placed.path):
                warnings += [Problem(*w) for w in reading_warnings(raw, field_path, field_kind, dialect)]
    return warnings


def _dialect(steps: list[tuple[str, lang.StepModel]]) -> Dialect:
    """`dollar` if any string in any step's fields is a `$ expr`, else `seed` (values.detect_dialect's rule,
    over the steps that parsed)."""
    dollar = any(has_dollar(raw) for path, step in steps for _, raw, _ in step.evaluable_fields(path))
    return "dollar" if dollar else "seed"


def _check_step_count(parts: TaskParts, limit: int) -> None:
    """Refuse a task with more than `limit` steps (nested ones included), naming the first step past it;
    checked first, so an oversized task costs no further work."""
    if len(parts.steps) > limit:
        count, first_over = len(parts.steps), parts.steps[limit][0]
        message = (
            f"the task has {count} steps (nested ones included); the step limit is {limit} (MINT_MAX_STEPS)"
        )
        raise TaskInvalid([*parts.problems, Problem(first_over, message)])


REDUCE_NAMES = frozenset({"results"})  # a map_reduce's reduce expression also sees the map's results
# The names an expression or a template may use, to suggest the closest to an unknown one.
_NAMES = CONTEXT_NAMES | KNOWN_NAMES
_UNKNOWN_NAME = re.compile(r"unknown name '([A-Za-z_][A-Za-z0-9_]*)'( in template)?")


@dataclass
class _StepChecks:
    """The checks of each step that parsed: its expressions and templates, its label, and the tools and
    workflows it names. One per task: it keeps the labels seen so far, and the task's suggestion budget."""

    dialect: Dialect
    names: dict[str, set[str]]  # the tools and workflows steps may name
    max_length: int
    suggest: Suggestions
    labels: dict[str, str] = field(default_factory=dict)

    def __call__(self, step: lang.StepModel, path: str) -> list[Problem]:
        return (
            self._fields(step, path)
            + self._label(step, path)
            + self._references(step, path)
            + _reference_settings(step, path)
        )

    def _fields(self, step: lang.StepModel, path: str) -> list[Problem]:
        problems = []
        for field_path, raw, kind in step.evaluable_fields(path):
            extra = REDUCE_NAMES if kind == "reduce" else frozenset()
            reading = "expression" if kind == "reduce" else kind
            found = check_value(raw, reading, self.dialect, extra, self.max_length)
            problems += [Problem(field_path, self._name_suggested(m, extra)) for m in found]
        return problems

    def _name_suggested(self, message: str, extra: frozenset[str]) -> str:
        """An expression's "unknown name 'x'" with the closest known name, if one is close."""
        found = _UNKNOWN_NAME.match(message)
        if found is None:
            return message
        hint = self.suggest(found.group(1), _NAMES | extra, ignore_case=False)
        return message[: found.end()] + hint + message[found.end() :]

    def _label(self, step: lang.StepModel, path: str) -> list[Problem]:
        label = getattr(step, "label", None)
        if label is None:
            return []
        first = self.labels.setdefault(label, path)
        return (
            [] if first == path else [Problem(f"{path}.label", f"label {label!r} is already used at {first}")]
        )

    def _references(self, step: lang.StepModel, path: str) -> list[Problem]:
        problems = []
        for where, what, name in step.references(path):
            if not isinstance(name, str) or name not in self.names[what]:
                hint = self.suggest(name, self.names[what]) if isinstance(name, str) else ""
                listed = ", ".join(sorted(self.names[what])) or "none"
                problems.append(Problem(where, f"unknown {what} {name!r}{hint} ({what}s: {listed})"))
        return problems


def _reference_settings(step: lang.StepModel, path: str) -> list[Problem]:
    """A prompt step's pass-by-reference settings (workflows/references.py) are Mint's, and checked here."""
    settings = getattr(step, "settings", None)
    if not isinstance(step, lang.PromptStep) or not isinstance(settings, dict):
        return []
    return [Problem(f"{path}.settings", message) for message in setting_problems(settings)]


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


def _integration_argument_problems(
    step: lang.StepModel, path: str, integrations: dict[str, JsonObject]
) -> list[Problem]:
    """Arguments a step gives one of the task's integration tools that its provider's method does not take
    (one it needs and does not get is told when the step runs: metadata may still fill it in)."""
    if not isinstance(step, lang.ToolCallStep) or step.tool_name not in integrations:
        return []
    if not isinstance(step.tool_arguments, dict):
        return []
    where = f"{path}.{step.arguments_path}"
    found = argument_problems(integrations[step.tool_name], step.tool_arguments.keys(), complete=False)
    return [Problem(where, f"tool {step.tool_name!r}: {message}") for message in found]


def _duplicate_tools(tools: list[tuple[str, lang.ToolDef]]) -> list[Problem]:
    seen: dict[str, str] = {}
    problems = []
    for path, tool in tools:
        if tool.name in seen:
            problems.append(
                Problem(f"{path}.name", f"tool {tool.name!r} is already defined at {seen[tool.name]}")
            )
        seen.setdefault(tool.name, path)
    return problems
