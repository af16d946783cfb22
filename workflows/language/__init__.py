"""The task language: pydantic models for tasks, tools and every step kind, shared by the API and the
workflow. Import it as `from workflows import language as lang`; the modules inside are its parts:
`steps.py` (each step kind, declared once on its model), `nesting.py` (steps inside steps), `parts.py`
(what steps are built of), `tools.py`, `task.py` and `common.py`.

Both dialects parse into the same models; expression fields keep their raw text (`Any`) and are evaluated
by `workflows.values` according to the task's dialect.
"""

from workflows.language.common import NAME_PATTERN, Lenient, Seconds, model_keys
from workflows.language.guardrails import Guardrail, Guardrails
from workflows.language.nesting import PlacedStep, StepList, nested_steps, replace_nested, walk_steps
from workflows.language.parts import Message, RetrySpec, SearchSpec, SleepFor, StepDefaults, ToolRef, WaitInfo
from workflows.language.steps import (
    NOT_A_STEP,
    STEP,
    STEP_KEYS,
    STEP_KINDS,
    STEP_MODEL_BY_KIND,
    STEP_MODELS,
    AnyStep,
    CallStep,
    CaseThen,
    ErrorStep,
    EvaluableField,
    EvaluateStep,
    FieldReading,
    ForeachDo,
    ForeachStep,
    GetStep,
    IfElseStep,
    LogStep,
    MapReduceStep,
    Nesting,
    ParallelStep,
    PromptStep,
    Reference,
    ReturnStep,
    SearchStep,
    SetStep,
    SleepStep,
    Step,
    StepModel,
    Steps,
    SwitchStep,
    ToolCallStep,
    WaitForInputStep,
    YieldStep,
    dump_step,
    parse_steps,
    step_kind,
)
from workflows.language.task import IGNORED_TASK_FIELDS, MAIN_REQUIRED, TASK_FIELDS, TaskSpec, split_task
from workflows.language.tools import (
    CLIENT_TOOL_TYPES,
    TOOL_TYPES,
    ApiCallDef,
    FunctionDef,
    ToolDef,
)

# The step kinds by how the interpreter runs them: pure steps inline (workflows/pure_steps.py), calls through
# activities (workflows/call_steps.py), and the steps that choose, fan out or wait.
PureStep = EvaluateStep | SetStep | GetStep | LogStep | ReturnStep | ErrorStep
ControlStep = (
    IfElseStep
    | SwitchStep
    | ForeachStep
    | MapReduceStep
    | ParallelStep
    | SleepStep
    | WaitForInputStep
    | YieldStep
)

__all__ = [
    "IGNORED_TASK_FIELDS",
    "MAIN_REQUIRED",
    "NAME_PATTERN",
    "NOT_A_STEP",
    "STEP",
    "STEP_KEYS",
    "STEP_KINDS",
    "STEP_MODELS",
    "STEP_MODEL_BY_KIND",
    "TASK_FIELDS",
    "TOOL_TYPES",
    "AnyStep",
    "ApiCallDef",
    "CallStep",
    "CaseThen",
    "ErrorStep",
    "EvaluableField",
    "EvaluateStep",
    "FieldReading",
    "ForeachDo",
    "ForeachStep",
    "FunctionDef",
    "GetStep",
    "Guardrail",
    "Guardrails",
    "IfElseStep",
    "Lenient",
    "LogStep",
    "MapReduceStep",
    "Message",
    "Nesting",
    "ParallelStep",
    "PureStep",
    "PlacedStep",
    "PromptStep",
    "Reference",
    "RetrySpec",
    "ReturnStep",
    "SearchSpec",
    "SearchStep",
    "Seconds",
    "SetStep",
    "SleepFor",
    "SleepStep",
    "Step",
    "StepList",
    "StepDefaults",
    "StepModel",
    "Steps",
    "SwitchStep",
    "TaskSpec",
    "ToolCallStep",
    "ToolDef",
    "CLIENT_TOOL_TYPES",
    "ToolRef",
    "WaitForInputStep",
    "WaitInfo",
    "YieldStep",
    "dump_step",
    "model_keys",
    "nested_steps",
    "parse_steps",
    "replace_nested",
    "split_task",
    "step_kind",
    "walk_steps",
]
