"""Parse as much of a task as parses. A task that does not parse as a whole is parsed part by part (its own
fields, each tool, each workflow, each step, each step nested in a step), so that validation
(workflows/validate.py) lists the structural problems of the parts that fail and still checks everything
in the parts that parse: expressions, labels, and the tools and workflows steps name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from contracts.json import JsonObject
from workflows import language as lang
from workflows.plain_errors import plain_problems
from workflows.problems import Problem, Suggestions

# Stands in for the steps nested in a step while the step itself is parsed: they are parsed on their own.
STAND_IN: JsonObject = {"log": ""}
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
    input_schema: JsonObject | None = None
    problems: list[Problem] = field(default_factory=list)


def parse_task(raw: JsonObject, suggest: Suggestions | None = None) -> TaskParts:
    """The task, parsed as a whole when it can be (the usual case, and the cheap one), else part by part.
    `suggest` looks for the keys unknown ones are typos of (the document's budget for it)."""
    try:
        spec = lang.TaskSpec.model_validate(raw)
    except ValidationError as exc:
        suggest = suggest or Suggestions()
        parts = _ByParts(suggest).task(raw)
        # Every part parsed on its own, yet the whole did not: what the whole parse said, in plain words.
        parts.problems = parts.problems or plain_problems(exc.errors(), suggest=suggest)
        return parts
    return TaskParts(
        spec=spec,
        steps=[
            (p.path, p.step) for name, steps in spec.workflows.items() for p in lang.walk_steps(steps, name)
        ],
        tools=[(f"tools[{i}]", tool) for i, tool in enumerate(spec.tools)],
        tool_names={tool.name for tool in spec.tools},
        workflow_names=set(spec.workflows),
        inherit_tools=spec.inherit_tools,
        input_schema=spec.input_schema,
    )


class _ByParts:
    """One task's parse part by part: the problems found so far, and the document's suggestion budget."""

    def __init__(self, suggest: Suggestions):
        self.suggest = suggest
        self.problems: list[Problem] = []

    def task(self, raw: JsonObject) -> TaskParts:
        fields, workflows = lang.split_task(raw)
        parts = TaskParts(spec=None, workflow_names=set(workflows))
        self._task_fields(fields, workflows)
        inherit, schema = fields.get("inherit_tools"), fields.get("input_schema")
        parts.inherit_tools = inherit if isinstance(inherit, bool) else True
        parts.input_schema = schema if isinstance(schema, dict) else None
        tools = fields.get("tools")
        for i, tool in enumerate(tools if isinstance(tools, list) else []):
            self._tool(tool, f"tools[{i}]", parts)
        for name, steps in workflows.items():
            if isinstance(steps, list) and steps:
                parts.steps += self._workflow(name, steps)
        parts.problems = self.problems
        return parts

    def _task_fields(self, fields: JsonObject, workflows: JsonObject) -> None:
        """The problems with the task's own fields, and with workflows that are no list of steps."""
        if "main" not in workflows:
            meant = self.suggest.closest("main", workflows)
            hint = f" (is `{meant}` meant to be `main`?)" if meant else ""
            self.problems.append(Problem("main", lang.MAIN_REQUIRED + hint))
        # Tools and steps stand in for themselves here: each is parsed on its own.
        stubs = {name: [STAND_IN] if isinstance(v, list) and v else v for name, v in workflows.items()}
        for name, value in workflows.items():
            if stubs[name] is value and (meant := self._task_field_meant(name)):
                self.problems.append(_misnamed(name, meant))
                stubs[name] = [STAND_IN]
        skeleton = {**fields, "workflows": {"main": [STAND_IN], **stubs}}
        if isinstance(fields.get("tools"), list):
            skeleton["tools"] = []
        try:
            lang.TaskSpec.model_validate(skeleton)
        except ValidationError as exc:
            self.problems += plain_problems(exc.errors(), suggest=self.suggest)

    def _task_field_meant(self, name: str) -> str | None:
        """The task field a workflow's name is a typo of (every top-level key that is no field names a
        workflow, so `descripton: ...` is one, and no list of steps)."""
        return None if name == "main" else self.suggest.closest(name, lang.TASK_FIELDS - {"main"})

    def _tool(self, raw: Any, path: str, parts: TaskParts) -> None:
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            parts.tool_names.add(
                raw["name"]
            )  # so a step calling a tool that is wrong is not told it is unknown
        try:
            tool = lang.ToolDef.model_validate(raw)
        except ValidationError as exc:
            self.problems += plain_problems(exc.errors(), path, root=lang.ToolDef, suggest=self.suggest)
            return
        parts.tools.append((path, tool))
        parts.tool_names.add(tool.name)

    def _workflow(self, name: str, steps: list[Any]) -> list[Step]:
        before = len(self.problems)
        parsed = self._steps(steps, name)
        if len(self.problems) > before and (meant := self._task_field_meant(name)):
            self.problems[before:] = [_misnamed(name, meant)]
        return parsed

    def _steps(self, items: list[Any], path: str) -> list[Step]:
        return [step for i, item in enumerate(items) for step in self._step(item, f"{path}[{i}]")]

    def _step(self, raw: Any, path: str) -> list[Step]:
        """The steps that parse in `raw` (it, and those nested in it), depth first. A step with nested steps
        is parsed with stand-ins for them, each nested step on its own: every step is parsed once, however
        deep it is."""
        if lang.step_kind(raw) is None:
            self.problems.append(self._not_a_step(raw, path))
            return []
        nested: list[Step] = []

        def stand_in(where: str, value: Any) -> Any:
            if value is None or value == []:
                return value  # no steps at all: the step's own parse says whether that is allowed
            nested.extend(self._steps(value if isinstance(value, list) else [value], where))
            return [STAND_IN]

        try:
            step = lang.STEP.validate_python(lang.replace_nested(raw, path, stand_in))
        except ValidationError as exc:
            self.problems += plain_problems(exc.errors(), path, tagged=True, suggest=self.suggest)
            return nested
        return [(path, step), *nested]

    def _not_a_step(self, raw: Any, path: str) -> Problem:
        """A mapping of no step kind: the kind its keys come closest to, or the key only one kind has."""
        keys = (
            [k for k in raw if isinstance(k, str) and k not in _ANY_STEP_KEYS]
            if isinstance(raw, dict)
            else []
        )
        for key in keys:
            if meant := self.suggest.closest(key, lang.STEP_KEYS):
                return Problem(path, f"unknown step key `{key}`: did you mean `{meant}`?")
        for key in keys:
            model = _ONLY_IN.get(key)
            if model is not None and model is not lang.StepModel:
                kind = model.KIND
                article = "an" if kind[0] in "aeiou" else "a"
                return Problem(
                    path, f"not a step: `{key}` belongs in {article} `{kind}` step, which needs `{model.KEY}`"
                )
        return Problem(path, lang.NOT_A_STEP)


def _misnamed(name: str, meant: str) -> Problem:
    return Problem(
        name,
        f"unknown task key `{name}`: did you mean `{meant}`? (other top-level keys name workflows, which are "
        "lists of steps)",
    )
