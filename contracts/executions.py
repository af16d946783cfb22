"""The payloads of an execution's workflows: TaskExecutionWorkflow's input and resume signal, and the
MapChunkWorkflow children a large fan-out runs in.

Their field names are part of every recorded history: add a field only with a default (a history written
before it has no such key), and never rename one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from contracts.json import JsonObject, JsonValue
from contracts.transitions import TransitionRow

# An api_call's `timeout` (the deadline of the whole call) may not exceed this (MINT_MAX_TOOL_TIMEOUT_SECONDS).
DEFAULT_MAX_TOOL_TIMEOUT_SECONDS = 300.0


class FrameSnapshot(TypedDict):
    """A run of a named workflow, as a continued-as-new run or a fan-out's chunk takes it up
    (workflows/frames.py Frame): its name, scope and step inputs so far."""

    name: str
    scope_id: str
    inputs: list[JsonValue]


class StepRecord(TypedDict):
    """What `steps[...]` reads of a step that ran: its input and output (a labelled step's are kept by its
    label)."""

    input: JsonValue
    output: JsonValue


@dataclass
class ResumePoint:
    """Where a continued-as-new execution picks up: the root frame, its next step, and all shared state."""

    frame: FrameSnapshot
    index: int
    seq: int
    state: JsonObject
    labels: dict[str, StepRecord]
    legacy: bool = True  # log, yield and reduce in their old form (a resume point older than this has none)
    # A restart with a new input for the step it restarts: the input guardrails check that input first (a
    # continue-as-new's resume point, and one written before, has no new input).
    new_input: bool = False


@dataclass
class ExecutionParams:
    """TaskExecutionWorkflow's input: everything an execution needs, fixed when it starts (the task version
    included)."""

    execution_id: str
    developer_id: str
    # The task and its tools as the API stores them (the task's `document`; each tool a ToolDef dumped by
    # alias). They cross as JSON, not as parsed models: the interpreter parses them once per run
    # (workflows/tool_kinds.py for tools), and a model dumped back would not be the same JSON (defaults,
    # aliases), which would change what histories hold.
    task: JsonObject
    dialect: str
    input: Any
    # The agent, task and execution as expressions read them (`agent`, `task`, `execution`): the agent's
    # keys are services/handoffs.py AGENT_VIEW_KEYS (workflows/agents.py reads them), the task's id, name,
    # version and metadata, the execution's id and metadata.
    agent: JsonObject = field(default_factory=dict)
    task_info: JsonObject = field(default_factory=dict)
    execution_info: JsonObject = field(default_factory=dict)
    tools: list[JsonObject] = field(default_factory=list)
    max_history_events: int = 10_000
    max_fan_out: int = 100_000  # items one foreach or map may run over (MINT_MAX_FAN_OUT)
    max_tool_timeout: float = DEFAULT_MAX_TOOL_TIMEOUT_SECONDS  # MINT_MAX_TOOL_TIMEOUT_SECONDS
    # What a template prints for a null: nothing, for executions started now; a run recorded before has no
    # field and replays printing "None". (An input field, not a workflow.patched marker: each marker upserts
    # a search attribute, which cost every execution's start measurably on the dev server.)
    null_text: str = "None"
    # The changes of behaviour (patch ids) this run takes from its start without recording patch markers
    # (workflows/patches.py): every one there is, for executions started now; none for a run recorded before
    # the field, which asks its history's markers.
    patches: list[str] = field(default_factory=list)
    resume: ResumePoint | None = None  # set when the execution continued as new
    # The agents a prompt step may be handed to (the agent's handoffs, theirs, ...), by id, each with its
    # `tools`: read when the execution starts, so a handoff inside the workflow is deterministic.
    handoff_agents: dict[str, JsonObject] = field(default_factory=dict)
    # Activity name -> the task queue it runs on, for the kinds the deployment gives queues of their own
    # (contracts/temporal.py QUEUE_KINDS): fixed when the execution starts, so that every replay schedules
    # the same commands whatever a worker's settings say. A call with a queue never runs in the worker.
    queues: dict[str, str] = field(default_factory=dict)
    # Where the execution reports its statuses (workflows/webhooks.py): the create body's callback_url, else
    # its task's. None sends nothing (and schedules no command, as every run recorded before the field).
    callback_url: str | None = None


@dataclass
class ResumeInput:
    """The `resume` signal (PUT /executions/{id} with status `running`): `input` answers wait `wait_seq`."""

    wait_seq: int | None = None
    input: Any = None
    # The client named this wait (PUT with `wait_id`): never hand the input to another open wait instead.
    exact: bool = False


@dataclass
class MapChunk:
    """MapChunkWorkflow's input: part of a large fan-out, `body` for each of `items` (numbered from `first`),
    seeing the parent's frame, state and labels as they were when the chunk started."""

    params: ExecutionParams
    body: list[JsonObject]  # the steps, dumped (workflows.language.dump_step)
    path: str
    frame: FrameSnapshot
    state: JsonObject
    labels: dict[str, StepRecord]
    items: list[Any]
    first: int
    parallelism: int
    legacy: bool = True  # the parent's (a chunk started by a parent older than this field has none)


@dataclass
class ChunkOutcome:
    """MapChunkWorkflow's result: the items' results and the transitions the parent adopts."""

    results: list[Any]
    transitions: list[TransitionRow]
    state: JsonObject = field(default_factory=dict)
    labels: dict[str, StepRecord] = field(default_factory=dict)
    returned: bool = False  # a `return` step ran in the body: the parent's workflow returns return_value
    return_value: Any = None
