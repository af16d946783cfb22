"""Every step kind, declared once, on its model.

A step model says which YAML key marks it (`KEY`), its tag in the step union (`KIND`), whether it can add
history events when it runs (`ADDS_HISTORY`: calls, waits, timers, sub-workflows), which of its fields are
evaluated and how each is read (`evaluable_fields`), the step lists nested in it (`NESTED`: where each is in
the task as written and the path it runs under), and the tools and workflows it names (`references`).
Everything else (the key table, the parser's discriminator, the walk over nested steps in
`workflows/language/nesting.py`, validation, fan-out chunking, restart plans) is derived from those, so a new
step kind is one new class here plus its case in the interpreter's dispatch.

Expression fields keep their raw text (`Any`); `workflows.values` evaluates them by the task's dialect.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    field_validator,
)

from contracts.json import JsonObject
from workflows.language.common import NAME_PATTERN, JsonField, Lenient, Seconds
from workflows.language.parts import (
    Durability,
    Message,
    RetrySpec,
    SearchSpec,
    SleepFor,
    ToolRef,
    WaitInfo,
)

# How a field is read: `value` string by string by the dialect, `template` as Jinja, `expression` as
# Python, `reduce` as a map_reduce's reduce expression (which also sees `results`).
FieldReading = Literal["value", "template", "expression", "reduce"]
# (path, raw text, how it is read)
EvaluableField = tuple[str, Any, FieldReading]
# (path, what is named: "tool" or "workflow", the name)
Reference = tuple[str, str, Any]


@dataclass(frozen=True)
class Nesting:
    """Where a step kind holds a list of steps. `source`: its keys in the task as written, after the step's
    path, joined by `.`, with `[]` for each item of a list (`switch[].then`: `main[2].switch[1].then`);
    `runtime`: the path the interpreter runs the list under, after the step's own (`switch[]`: `main[2].switch[1]`),
    which transitions record as `current.workflow` (workflows/interpreter.py, workflows/fan_out.py)."""

    source: str
    runtime: str


class StepModel(Lenient):
    """What every step has, and the declarations each kind makes (see the module's docstring)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)
    KEY: ClassVar[str]
    KIND: ClassVar[str]
    ADDS_HISTORY: ClassVar[bool] = False
    NESTED: ClassVar[tuple[Nesting, ...]] = ()

    label: Annotated[str, Field(min_length=1, max_length=120)] | None = None
    kind_: str | None = None
    # `run` lets the step join a run of steps in one activity, where it can (workflows/step_runs.py).
    durability: Durability | None = None

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        """The fields evaluated when the step runs (not those of its nested steps)."""
        return iter(())

    def references(self, path: str) -> Iterator[Reference]:
        """The tools and workflows this step names, which must exist when the task is created."""
        return iter(())


def _each_key(mapping: Mapping[str, object], path: str) -> Iterator[EvaluableField]:
    for key, raw in mapping.items():
        yield f"{path}.{key}", raw, "value"


class CallStep(StepModel):
    """A step that calls out (tool, prompt, search): each attempt is bounded by `timeout` and retried by `retry`."""

    ADDS_HISTORY = True
    timeout: Seconds | None = None
    retry: RetrySpec | None = None
    # Run in the workflow's worker, or queued (workflows/calls.py decides when unset).
    local: bool | None = None


class EvaluateStep(StepModel):
    KEY, KIND = "evaluate", "evaluate"
    evaluate: dict[str, object]

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        return _each_key(self.evaluate, f"{path}.evaluate")


class PromptStep(CallStep):
    KEY, KIND = "prompt", "prompt"
    prompt: str | list[Message]
    settings: JsonField | None = None
    unwrap: bool = False
    tools: Literal["all"] | list[Any] | None = None
    tool_choice: Any = None
    auto_run_tools: bool = False
    max_turns: Annotated[int, Field(ge=1, le=100)] | None = None

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        if isinstance(self.prompt, str):
            yield f"{path}.prompt", self.prompt, "template"
            return
        for i, message in enumerate(self.prompt):
            if isinstance(message.content, str):
                yield f"{path}.prompt[{i}].content", message.content, "template"

    def references(self, path: str) -> Iterator[Reference]:
        for i, ref in enumerate(self.tools if isinstance(self.tools, list) else []):
            name = ref if isinstance(ref, str) else ref.get("name") if isinstance(ref, dict) else None
            yield f"{path}.tools[{i}]", "tool", name


class ToolCallStep(CallStep):
    KEY, KIND = "tool", "tool"
    tool: str | ToolRef
    arguments: Any = None

    @property
    def tool_name(self) -> str:
        return self.tool if isinstance(self.tool, str) else self.tool.name

    @property
    def tool_arguments(self) -> Any:
        return self.arguments if isinstance(self.tool, str) else self.tool.arguments

    @property
    def arguments_path(self) -> str:
        """Where the arguments are written, under the step's path."""
        return "tool.arguments" if isinstance(self.tool, ToolRef) else "arguments"

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        yield f"{path}.{self.arguments_path}", self.tool_arguments, "value"

    def references(self, path: str) -> Iterator[Reference]:
        yield f"{path}.tool", "tool", self.tool_name


def _as_list(value: Any) -> Any:
    """`then`, `else` and `do` accept one step or a list of steps."""
    return value if isinstance(value, list) else [value]


Steps = Annotated[list["Step"], BeforeValidator(_as_list), Field(min_length=1)]


class IfElseStep(StepModel):
    KEY, KIND = "if", "if_else"
    NESTED = (Nesting("then", "then"), Nesting("else", "else"))
    if_: Any = Field(alias="if")
    then: Steps
    else_: Steps | None = Field(default=None, alias="else")

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        yield f"{path}.if", self.if_, "expression"


class CaseThen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    case: Any
    then: Steps


class SwitchStep(StepModel):
    KEY, KIND = "switch", "switch"
    NESTED = (Nesting("switch[].then", "switch[]"),)
    switch: Annotated[list[CaseThen], Field(min_length=1)]

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        for i, case in enumerate(self.switch):
            if case.case != "_":
                yield f"{path}.switch[{i}].case", case.case, "expression"


class ForeachDo(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    in_: Any = Field(alias="in")
    do: Steps


class ForeachStep(StepModel):
    KEY, KIND = "foreach", "foreach"
    NESTED = (Nesting("foreach.do", "foreach"),)
    foreach: ForeachDo

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        yield f"{path}.foreach.in", self.foreach.in_, "expression"


class MapReduceStep(StepModel):
    KEY, KIND = "over", "map_reduce"
    NESTED = (Nesting("map", "map"),)
    over: Any
    map: Steps
    reduce: str | None = None
    initial: Any = None
    parallelism: Annotated[int, Field(ge=1, le=100)] | None = None

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        yield f"{path}.over", self.over, "expression"
        if self.reduce is not None:
            yield f"{path}.reduce", self.reduce, "reduce"
        yield f"{path}.initial", self.initial, "value"


class ParallelStep(StepModel):
    KEY, KIND = "parallel", "parallel"
    NESTED = (Nesting("parallel[]", "parallel[]"),)
    parallel: Annotated[list[Steps], Field(min_length=1, max_length=100)]


class SleepStep(StepModel):
    KEY, KIND, ADDS_HISTORY = "sleep", "sleep", True
    sleep: SleepFor | Any

    @field_validator("sleep", mode="before")
    @classmethod
    def _sleep_shape(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return SleepFor.model_validate(value)
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(
                "sleep takes a number of seconds, an expression, or {seconds, minutes, hours, days}"
            )
        return value

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        if not isinstance(self.sleep, SleepFor):
            yield f"{path}.sleep", self.sleep, "value"
            return
        for unit in ("seconds", "minutes", "hours", "days"):
            yield f"{path}.sleep.{unit}", getattr(self.sleep, unit), "value"


class WaitForInputStep(StepModel):
    KEY, KIND, ADDS_HISTORY = "wait_for_input", "wait_for_input", True
    wait_for_input: WaitInfo

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        yield from self.wait_for_input.evaluable_fields(f"{path}.wait_for_input")


class YieldStep(StepModel):
    # A yield adds history as the workflow it runs does, which may hold any step.
    KEY, KIND, ADDS_HISTORY = "workflow", "yield", True
    workflow: Annotated[str, Field(pattern=NAME_PATTERN)]
    arguments: Any = None

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        yield f"{path}.arguments", self.arguments, "value"

    def references(self, path: str) -> Iterator[Reference]:
        yield f"{path}.workflow", "workflow", self.workflow


class ReturnStep(StepModel):
    KEY, KIND = "return", "return"
    return_: Any = Field(alias="return")

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        if isinstance(self.return_, dict):
            return _each_key(self.return_, f"{path}.return")
        return iter([(f"{path}.return", self.return_, "value")])


class ErrorStep(StepModel):
    KEY, KIND = "error", "error"
    error: str

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        yield f"{path}.error", self.error, "template"


class LogStep(StepModel):
    KEY, KIND = "log", "log"
    log: str

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        yield f"{path}.log", self.log, "template"


class SetStep(StepModel):
    KEY, KIND = "set", "set"
    set: dict[str, object]

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        return _each_key(self.set, f"{path}.set")


class GetStep(StepModel):
    KEY, KIND = "get", "get"
    get: str


class SearchStep(CallStep):
    KEY, KIND = "search", "search"
    search: SearchSpec

    def evaluable_fields(self, path: str) -> Iterator[EvaluableField]:
        yield f"{path}.search.query", self.search.query, "value"
        for name in ("agent", "user"):
            if getattr(self.search, name) is not None:
                yield f"{path}.search.{name}", getattr(self.search, name), "value"


# The step union, in the order a mapping's keys are looked for (the first key found decides its kind).
AnyStep = (
    EvaluateStep
    | PromptStep
    | ToolCallStep
    | IfElseStep
    | SwitchStep
    | ForeachStep
    | MapReduceStep
    | ParallelStep
    | SleepStep
    | WaitForInputStep
    | YieldStep
    | ReturnStep
    | ErrorStep
    | LogStep
    | SetStep
    | GetStep
    | SearchStep
)
STEP_MODELS: tuple[type[StepModel], ...] = get_args(AnyStep)
# The key that identifies each step kind (Julep also accepts an explicit `kind_`).
STEP_KEYS = {model.KEY: model.KIND for model in STEP_MODELS}
STEP_KINDS = frozenset(STEP_KEYS.values())
STEP_MODEL_BY_KIND = {model.KIND: model for model in STEP_MODELS}
NOT_A_STEP = "not a step: a step is a mapping with one of the keys " + ", ".join(STEP_KEYS)


def step_kind(raw: Any) -> str | None:
    """Which step kind a raw mapping (or a parsed step, when serializing) is."""
    # A dict by exact type first: every step of a task is read here as each execution starts, and isinstance
    # is slow inside the workflow sandbox.
    if raw.__class__ is not dict:
        if isinstance(raw, StepModel):
            return raw.KIND
        if not isinstance(raw, dict):
            return None
    kind = raw.get("kind_")
    # anything else is left to the `kind_` field to refuse
    if kind is not None and isinstance(kind, str) and kind in STEP_KINDS:
        return kind
    for key, kind in STEP_KEYS.items():
        if key in raw:
            return kind
    return None


if TYPE_CHECKING:
    Step = AnyStep
else:
    # For pydantic: each model tagged with its kind, and the kind found by step_kind.
    Step = Annotated[
        Union[tuple(Annotated[model, Tag(model.KIND)] for model in STEP_MODELS)],  # noqa: UP007
        Discriminator(
            step_kind,
            custom_error_type="unknown_step",
            custom_error_message=NOT_A_STEP,
        ),
    ]

for _model in (IfElseStep, CaseThen, ForeachDo, MapReduceStep, ParallelStep):
    _model.model_rebuild()


def dump_step(step: BaseModel) -> JsonObject:
    return step.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)


_STEP_LIST: TypeAdapter[list[Step]] = TypeAdapter(list[Step])
# One step on its own (validation parses the steps of a task that does not parse as a whole one by one).
STEP: TypeAdapter[Step] = TypeAdapter(Step)


def parse_steps(raw: list[JsonObject]) -> list[Step]:
    """Steps from what dump_step wrote (a fan-out body handed to a child workflow)."""
    return _STEP_LIST.validate_python(raw)
