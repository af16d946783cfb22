"""Parse as much of a task as parses. A task that does not parse as a whole is parsed part by part (its own
fields, each tool, each workflow, each step, each step nested in a step), so that validation
(workflows/validate.py) lists the structural problems of the parts that fail and still checks everything
in the parts that parse: expressions, labels, and the tools and workflows steps name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from workflows import language as lang
from workflows.plain_errors import plain_problems
from workflows.problems import Problem, closest

# Stands in for the steps nested in a step while the step itself is parsed: they are parsed on their own.
STAND_IN: dict[str, Any] = {"log": ""}
# Keys every step may have: they say nothing about which kind a step was meant to be.
_ANY_STEP_KEYS = frozenset(lang.model_keys(lang.StepModel)) | frozenset(lang.model_keys(lang.CallStep))
# Each key that only one step kind has, beside the one that marks it: `map` -> `over` (map_reduce).
_ONLY_IN: dict[str, type[lang.StepModel]] = {}
for _model in lang.STEP_MODELS:
    for _key in set(lang.model_keys(_model)) - _ANY_STEP_KEYS - {_model.KEY}:
        _ONLY_IN[_key] = _model if _key not in _ONLY_IN else lang.StepModel  # StepModel: several have it

Step = tuple[str, lang.StepModel]


@dataclass
class TaskParts:
    """What parsed, with paths; `problems` lists what did not."""

    spec: lang.TaskSpec | None  # the whole task, when it parsed as a whole
    steps: list[Step] = field(default_factory=list)  # every step that parsed, nested ones included
    tools: list[tuple[str, lang.ToolDef]] = field(default_factory=list)
    tool_names: set[str] = field(default_factory=set)  # every tool name written, parsed or not
    workflow_names: set[str] = field(default_factory=set)
    inherit_tools: bool = True
    input_schema: dict[str, Any] | None = None
    problems: list[Problem] = field(default_factory=list)


def parse_task(raw: dict[str, Any]) -> TaskParts:
    """The task, parsed as a whole when it can be (the usual case, and the cheap one), else part by part."""
    try:
        spec = lang.TaskSpec.model_validate(raw)
    except ValidationError as exc:
        parts = _parse_by_parts(raw)
        # Every part parsed on its own, yet the whole did not: what the whole parse said, in plain words.
        parts.problems = parts.problems or plain_problems(exc.errors())
        return parts
    return TaskParts(
        spec=spec,
        steps=[step for name, steps in spec.workflows.items() for step in lang.walk_steps(steps, name)],
        tools=[(f"tools[{i}]", tool) for i, tool in enumerate(spec.tools)],
        tool_names={tool.name for tool in spec.tools},
        workflow_names=set(spec.workflows),
        inherit_tools=spec.inherit_tools,
        input_schema=spec.input_schema,
    )


def _parse_by_parts(raw: dict[str, Any]) -> TaskParts:
    fields, workflows = lang.split_task(raw)
    parts = TaskParts(spec=None, workflow_names=set(workflows))
    parts.problems += _task_fields(fields, workflows)
    inherit, schema = fields.get("inherit_tools"), fields.get("input_schema")
    parts.inherit_tools = inherit if isinstance(inherit, bool) else True
    parts.input_schema = schema if isinstance(schema, dict) else None
    tools = fields.get("tools")
    for i, tool in enumerate(tools if isinstance(tools, list) else []):
        _parse_tool(tool, f"tools[{i}]", parts)
    for name, steps in workflows.items():
        if isinstance(steps, list) and steps:
            _parse_workflow(name, steps, parts)
    return parts


def _task_fields(fields: dict[str, Any], workflows: dict[str, Any]) -> list[Problem]:
    """The problems with the task's own fields, and with workflows that are no list of steps."""
    problems = []
    if "main" not in workflows:
        meant = closest("main", workflows)
        hint = f" (is `{meant}` meant to be `main`?)" if meant else ""
        problems.append(Problem("main", lang.MAIN_REQUIRED + hint))
    # Tools and steps stand in for themselves here: each is parsed on its own.
    stubs = {name: [STAND_IN] if isinstance(v, list) and v else v for name, v in workflows.items()}
    for name, value in workflows.items():
        if stubs[name] is value and (meant := _task_field_meant(name)):
            problems.append(_misnamed(name, meant))
            stubs[name] = [STAND_IN]
    skeleton = {**fields, "workflows": {"main": [STAND_IN], **stubs}}
    if isinstance(fields.get("tools"), list):
        skeleton["tools"] = []
    try:
        lang.TaskSpec.model_validate(skeleton)
    except ValidationError as exc:
        problems += plain_problems(exc.errors())
    return problems


def _parse_tool(raw: Any, path: str, parts: TaskParts) -> None:
    if isinstance(raw, dict) and isinstance(raw.get("name"), str):
        parts.tool_names.add(raw["name"])  # so a step calling a tool that is wrong is not told it is unknown
    try:
        tool = lang.ToolDef.model_validate(raw)
    except ValidationError as exc:
        parts.problems += plain_problems(exc.errors(), path, root=lang.ToolDef)
        return
    parts.tools.append((path, tool))
    parts.tool_names.add(tool.name)


def _parse_workflow(name: str, steps: list[Any], parts: TaskParts) -> None:
    problems: list[Problem] = []
    parsed = _parse_steps(steps, name, problems)
    if problems and (meant := _task_field_meant(name)):
        problems = [_misnamed(name, meant)]
    parts.steps += parsed
    parts.problems += problems


def _task_field_meant(name: str) -> str | None:
    """The task field a workflow's name is a typo of (every top-level key that is no field names a workflow,
    so `descripton: ...` is one, and no list of steps)."""
    return None if name == "main" else closest(name, lang.TASK_FIELDS - {"main"})


def _misnamed(name: str, meant: str) -> Problem:
    return Problem(
        name,
        f"unknown task key `{name}`: did you mean `{meant}`? (other top-level keys name workflows, which are "
        "lists of steps)",
    )


def _parse_steps(items: list[Any], path: str, problems: list[Problem]) -> list[Step]:
    return [step for i, item in enumerate(items) for step in _parse_step(item, f"{path}[{i}]", problems)]


def _parse_step(raw: Any, path: str, problems: list[Problem]) -> list[Step]:
    """The steps that parse in `raw` (it, and those nested in it), depth first; problems for those that do not."""
    try:
        return list(lang.walk_step(lang.STEP.validate_python(raw), path))
    except ValidationError as exc:
        errors = exc.errors()
    model = lang.STEP_MODEL_BY_KIND.get(lang.step_kind(raw) or "")
    if model is None:
        problems.append(not_a_step(raw, path))
        return []
    nested: list[Step] = []
    if model.NESTED:  # parse the nested steps on their own, then the step with stand-ins for them

        def stand_in(where: str, value: Any) -> Any:
            if value is None or value == []:
                return value  # no steps at all: the step's own parse says whether that is allowed
            nested.extend(_parse_steps(value if isinstance(value, list) else [value], where, problems))
            return [STAND_IN]

        try:
            step = lang.STEP.validate_python(lang.replace_nested(raw, path, stand_in))
            return [(path, step), *nested]
        except ValidationError as exc:
            errors = exc.errors()
    problems += plain_problems(errors, path, tagged=True)
    return nested


def not_a_step(raw: Any, path: str) -> Problem:
    """A mapping of no step kind: the kind its keys come closest to, or the key that belongs to one kind."""
    keys = [k for k in raw if isinstance(k, str) and k not in _ANY_STEP_KEYS] if isinstance(raw, dict) else []
    for key in keys:
        if meant := closest(key, lang.STEP_KEYS):
            return Problem(path, f"unknown step key `{key}`: did you mean `{meant}`?")
    for key in keys:
        model = _ONLY_IN.get(key)
        if model is not None and model is not lang.StepModel:
            return Problem(
                path, f"not a step: `{key}` belongs in {_a(model.KIND)} step, which needs `{model.KEY}`"
            )
    return Problem(path, lang.NOT_A_STEP)


def _a(kind: str) -> str:
    return f"{'an' if kind[0] in 'aeiou' else 'a'} `{kind}`"
