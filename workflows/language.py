"""The task language: pydantic models for tasks, tools and every step type, shared by the API and the workflow.

Both dialects parse into the same models; expression fields keep their raw text (`Any`) and are evaluated
by `workflows.values` according to the task's dialect.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    TypeAdapter,
    ValidationInfo,
    field_validator,
    model_validator,
)

from workflows.system_ops import operation_key

# The key that identifies each step kind (Julep also accepts an explicit `kind_`).
STEP_KEYS = {
    "evaluate": "evaluate",
    "prompt": "prompt",
    "tool": "tool",
    "if": "if_else",
    "switch": "switch",
    "foreach": "foreach",
    "over": "map_reduce",
    "parallel": "parallel",
    "sleep": "sleep",
    "wait_for_input": "wait_for_input",
    "workflow": "yield",
    "return": "return",
    "error": "error",
    "log": "log",
    "set": "set",
    "get": "get",
    "search": "search",
}
STEP_KINDS = frozenset(STEP_KEYS.values())
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]*$"


def step_kind(raw: Any) -> str | None:
    """Which step kind a raw mapping (or a parsed step, when serializing) is."""
    if isinstance(raw, _Step):
        return KIND_OF_MODEL.get(type(raw))
    if not isinstance(raw, dict):
        return None
    if raw.get("kind_") in STEP_KINDS:
        return raw["kind_"]
    for key, kind in STEP_KEYS.items():
        if key in raw:
            return kind
    return None


class _Lenient(BaseModel):
    """A model that takes keys it does not know, as Julep v1's did, and sets them aside: they are not kept,
    and `ignored_keys` names them for the creation answer's warnings (workflows/validate.py), which also
    refuses the ones that signal a mistake rather than a Julep habit."""

    model_config = ConfigDict(extra="allow")
    _ignored: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _set_aside_unknown_keys(self) -> _Lenient:
        if self.__pydantic_extra__:
            self._ignored = tuple(self.__pydantic_extra__)
            object.__setattr__(self, "__pydantic_extra__", {})  # so they are never dumped or stored
        return self

    @property
    def ignored_keys(self) -> tuple[str, ...]:
        return self._ignored


class _Step(_Lenient):
    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)
    label: Annotated[str, Field(min_length=1, max_length=120)] | None = None
    kind_: str | None = None


Seconds = Annotated[float, Field(gt=0, le=30 * 86400)]


class RetrySpec(BaseModel):
    """How a step that calls out is retried (Temporal's retry policy, in seconds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_attempts: Annotated[int, Field(ge=1, le=100)] | None = None
    initial_interval: Seconds | None = None
    backoff: Annotated[float, Field(ge=1, le=10)] | None = None
    max_interval: Seconds | None = None
    non_retryable: list[str] | None = None


class StepDefaults(BaseModel):
    """A task's defaults for the steps that call out."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    timeout: Seconds | None = None
    retry: RetrySpec | None = None
    settings: dict[str, Any] | None = None  # model settings for every prompt step (the step's own win)


class _CallStep(_Step):
    """A step that calls out (tool, prompt, search): each attempt is bounded by `timeout` and retried by `retry`."""

    timeout: Seconds | None = None
    retry: RetrySpec | None = None


class EvaluateStep(_Step):
    evaluate: dict[str, Any]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: Any
    name: str | None = None


class PromptStep(_CallStep):
    prompt: str | list[Message]
    settings: dict[str, Any] | None = None
    unwrap: bool = False
    tools: Literal["all"] | list[Any] | None = None
    tool_choice: Any = None
    auto_run_tools: bool = False
    max_turns: Annotated[int, Field(ge=1, le=100)] | None = None


class ToolRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    arguments: Any = None


class ToolCallStep(_CallStep):
    tool: str | ToolRef
    arguments: Any = None

    @property
    def tool_name(self) -> str:
        return self.tool if isinstance(self.tool, str) else self.tool.name

    @property
    def tool_arguments(self) -> Any:
        return self.arguments if isinstance(self.tool, str) else self.tool.arguments


def _as_list(value: Any) -> Any:
    """`then`, `else` and `do` accept one step or a list of steps."""
    return value if isinstance(value, list) else [value]


Steps = Annotated[list["Step"], BeforeValidator(_as_list), Field(min_length=1)]


class IfElseStep(_Step):
    if_: Any = Field(alias="if")
    then: Steps
    else_: Steps | None = Field(default=None, alias="else")


class CaseThen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    case: Any
    then: Steps


class SwitchStep(_Step):
    switch: Annotated[list[CaseThen], Field(min_length=1)]


class ForeachDo(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    in_: Any = Field(alias="in")
    do: Steps


class ForeachStep(_Step):
    foreach: ForeachDo


class MapReduceStep(_Step):
    over: Any
    map: Steps
    reduce: str | None = None
    initial: Any = None
    parallelism: Annotated[int, Field(ge=1, le=100)] | None = None


class ParallelStep(_Step):
    parallel: Annotated[list[Steps], Field(min_length=1, max_length=100)]


class SleepFor(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    seconds: Any = 0
    minutes: Any = 0
    hours: Any = 0
    days: Any = 0


class SleepStep(_Step):
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


class WaitInfo(BaseModel):
    """`timeout` bounds the wait; when it passes, `on_timeout: fail` fails the step and `continue` goes on
    with `default` as the step's output."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    info: Any = None
    timeout: Seconds | None = None
    on_timeout: Literal["fail", "continue"] = "fail"
    default: Any = None


class WaitForInputStep(_Step):
    wait_for_input: WaitInfo


class YieldStep(_Step):
    workflow: Annotated[str, Field(pattern=NAME_PATTERN)]
    arguments: Any = None


class ReturnStep(_Step):
    return_: Any = Field(alias="return")


class ErrorStep(_Step):
    error: str


class LogStep(_Step):
    log: str


class SetStep(_Step):
    set: dict[str, Any]


class GetStep(_Step):
    get: str


class SearchSpec(BaseModel):
    """Search the docs of the task's agent (or `agent`) and of `user`, when given; both are expressions."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    query: Any
    mode: Literal["text", "vector", "hybrid"] = "hybrid"
    limit: Annotated[int, Field(ge=1, le=100)] = 10
    metadata_filter: dict[str, Any] | None = None
    agent: Any = None
    user: Any = None
    alpha: Annotated[float, Field(ge=0, le=1)] = 0.5
    mmr_strength: Annotated[float, Field(ge=0, lt=1)] = 0.0
    confidence: Annotated[float, Field(ge=-1, le=1)] = 0.0


class SearchStep(_CallStep):
    search: SearchSpec


Step = Annotated[
    Annotated[EvaluateStep, Tag("evaluate")]
    | Annotated[PromptStep, Tag("prompt")]
    | Annotated[ToolCallStep, Tag("tool")]
    | Annotated[IfElseStep, Tag("if_else")]
    | Annotated[SwitchStep, Tag("switch")]
    | Annotated[ForeachStep, Tag("foreach")]
    | Annotated[MapReduceStep, Tag("map_reduce")]
    | Annotated[ParallelStep, Tag("parallel")]
    | Annotated[SleepStep, Tag("sleep")]
    | Annotated[WaitForInputStep, Tag("wait_for_input")]
    | Annotated[YieldStep, Tag("yield")]
    | Annotated[ReturnStep, Tag("return")]
    | Annotated[ErrorStep, Tag("error")]
    | Annotated[LogStep, Tag("log")]
    | Annotated[SetStep, Tag("set")]
    | Annotated[GetStep, Tag("get")]
    | Annotated[SearchStep, Tag("search")],
    Discriminator(
        step_kind,
        custom_error_type="unknown_step",
        custom_error_message="not a step: a step is a mapping with one of the keys " + ", ".join(STEP_KEYS),
    ),
]

for _model in (IfElseStep, CaseThen, ForeachDo, MapReduceStep, ParallelStep):
    _model.model_rebuild()

KIND_OF_MODEL: dict[type, str] = {
    EvaluateStep: "evaluate",
    PromptStep: "prompt",
    ToolCallStep: "tool",
    IfElseStep: "if_else",
    SwitchStep: "switch",
    ForeachStep: "foreach",
    MapReduceStep: "map_reduce",
    ParallelStep: "parallel",
    SleepStep: "sleep",
    WaitForInputStep: "wait_for_input",
    YieldStep: "yield",
    ReturnStep: "return",
    ErrorStep: "error",
    LogStep: "log",
    SetStep: "set",
    GetStep: "get",
    SearchStep: "search",
}


# Tools -----------------------------------------------------------------------------------------------------

TOOL_TYPES = ("function", "api_call", "system", "integration")


class FunctionDef(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ApiCallDef(_Lenient):
    model_config = ConfigDict(extra="allow")
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] = "GET"
    url: str
    headers: dict[str, str] | None = None
    params: dict[str, Any] | None = None
    json_: Any = Field(default=None, alias="json")
    content: str | None = None
    data: dict[str, Any] | None = None
    follow_redirects: bool = False
    # The whole call's deadline; its upper bound is configured (MINT_MAX_TOOL_TIMEOUT_SECONDS, workflows/validate.py).
    timeout: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    params_schema: dict[str, Any] | None = None


class ToolDef(BaseModel):
    """A tool as written in a task or attached to an agent (Julep v1 shape, or the seed's `function:` form)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    name: Annotated[str, Field(pattern=NAME_PATTERN, max_length=64)]
    type: Literal["function", "api_call", "system", "integration"]
    description: str | None = None
    function: FunctionDef | None = None
    api_call: ApiCallDef | None = Field(default=None, validate_default=True)
    system: dict[str, Any] | None = Field(default=None, validate_default=True)
    integration: dict[str, Any] | None = None
    # In a prompt's tool loop, a failed call goes back to the model as an error result ("report"), or
    # fails the step ("fail").
    on_error: Literal["report", "fail"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _infer_type(cls, raw: Any) -> Any:
        # The seed writes `- function:\n  name: send_email`, which YAML reads as {function: None, name: ...}.
        if isinstance(raw, dict) and "type" not in raw:
            present = [t for t in TOOL_TYPES if t in raw]
            if len(present) == 1:
                raw = {**raw, "type": present[0]}
        if isinstance(raw, dict) and isinstance(raw.get("function"), dict) and "name" not in raw:
            raw = {**raw, "name": raw["function"].get("name")}
        return raw

    @field_validator("system")
    @classmethod
    def _known_system_operation(
        cls, value: dict[str, Any] | None, info: ValidationInfo
    ) -> dict[str, Any] | None:
        # Refused when the task is created, not when the step first runs.
        if value is None and info.data.get("type") == "system":
            raise ValueError("a system tool needs a `system` spec: {resource, subresource, operation}")
        if value is not None:
            operation_key(value)
        return value

    @field_validator("api_call")
    @classmethod
    def _api_call_present(cls, value: ApiCallDef | None, info: ValidationInfo) -> ApiCallDef | None:
        if value is None and info.data.get("type") == "api_call":
            raise ValueError("an api_call tool needs an `api_call` spec with at least `url`")
        return value


# Tasks -----------------------------------------------------------------------------------------------------

TASK_FIELDS = frozenset(
    {"name", "description", "input_schema", "tools", "inherit_tools", "metadata", "defaults", "main"}
)
IGNORED_TASK_FIELDS = frozenset(
    {
        "id",
        "created_at",
        "updated_at",
        "agent_id",
        "canonical_name",
        "version",
        "developer_id",
        "jobs",
        "warnings",
    }
)


class TaskSpec(BaseModel):
    """A whole task: `main` plus any other named workflows (every unknown top-level key is one)."""

    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(min_length=1, max_length=255)]
    description: str = ""
    input_schema: dict[str, Any] | None = None
    tools: list[ToolDef] = Field(default_factory=list)
    inherit_tools: bool = True
    metadata: dict[str, Any] = Field(default_factory=dict)
    defaults: StepDefaults | None = None
    workflows: dict[str, Annotated[list[Step], Field(min_length=1)]]

    @model_validator(mode="before")
    @classmethod
    def _collect_workflows(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return raw
        fields = {k: v for k, v in raw.items() if k in TASK_FIELDS and k != "main"}
        workflows = {k: v for k, v in raw.items() if k not in TASK_FIELDS and k not in IGNORED_TASK_FIELDS}
        if "main" in raw:
            workflows = {"main": raw["main"], **workflows}
        if "workflows" in raw and isinstance(raw["workflows"], dict):
            workflows = {**raw["workflows"], **{k: v for k, v in workflows.items() if k != "workflows"}}
        return {**fields, "workflows": workflows}

    @field_validator("workflows")
    @classmethod
    def _main_required(cls, workflows: dict[str, Any]) -> dict[str, Any]:
        if "main" not in workflows:
            raise ValueError("a task needs a `main` workflow (a list of steps)")
        return workflows

    def to_document(self) -> dict[str, Any]:
        """The task as users write it (named workflows at the top level), JSON-ready."""
        body = self.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"workflows"})
        for name, steps in self.workflows.items():
            body[name] = [dump_step(s) for s in steps]
        return body


def dump_step(step: BaseModel) -> dict[str, Any]:
    return step.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)


_STEP_LIST: TypeAdapter[list[Step]] = TypeAdapter(list[Step])


def parse_steps(raw: list[dict[str, Any]]) -> list[Step]:
    """Steps from what dump_step wrote (a fan-out body handed to a child workflow)."""
    return _STEP_LIST.validate_python(raw)


# The step tree ------------------------------------------------------------------------------------------------


def walk_steps(steps: Sequence[BaseModel], path: str) -> Iterator[tuple[str, BaseModel]]:
    """Yield (path, step) for every step, nested ones included, depth first."""
    for i, step in enumerate(steps):
        here = f"{path}[{i}]"
        yield here, step
        for sub_path, sub_steps in nested_sequences(step, here):
            yield from walk_steps(sub_steps, sub_path)


def nested_sequences(step: BaseModel, path: str) -> list[tuple[str, Sequence[BaseModel]]]:
    """The step lists inside a step, with their paths."""
    match step:
        case IfElseStep():
            branches: list[tuple[str, Sequence[BaseModel]]] = [(f"{path}.then", step.then)]
            return branches + ([(f"{path}.else", step.else_)] if step.else_ else [])
        case SwitchStep():
            return [(f"{path}.switch[{i}].then", c.then) for i, c in enumerate(step.switch)]
        case ForeachStep():
            return [(f"{path}.foreach.do", step.foreach.do)]
        case MapReduceStep():
            return [(f"{path}.map", step.map)]
        case ParallelStep():
            return [(f"{path}.parallel[{i}]", branch) for i, branch in enumerate(step.parallel)]
    return []
