"""A whole task: its tools, defaults and named workflows of steps."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from contracts.budgets import Budget
from contracts.json import JsonObject
from contracts.webhooks import CallbackUrl
from workflows.language.common import JsonField
from workflows.language.guardrails import Guardrails
from workflows.language.parts import StepDefaults
from workflows.language.steps import Step, dump_step
from workflows.language.tools import ToolDef

TASK_FIELDS = frozenset(
    {
        "name",
        "description",
        "input_schema",
        "tools",
        "inherit_tools",
        "metadata",
        "defaults",
        "guardrails",
        "main",
        "budget",
        "callback_url",
    }
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


MAIN_REQUIRED = "a task needs a `main` workflow (a list of steps)"


def split_task(raw: JsonObject) -> tuple[JsonObject, JsonObject]:
    """(the task's own fields, its workflows by name) of a task document: every top-level key that is no
    task field names a workflow (and a `workflows:` mapping holds more); Julep's read-only keys are dropped."""
    fields = {k: v for k, v in raw.items() if k in TASK_FIELDS and k != "main"}
    workflows = {k: v for k, v in raw.items() if k not in TASK_FIELDS and k not in IGNORED_TASK_FIELDS}
    if "main" in raw:
        workflows = {"main": raw["main"], **workflows}
    if "workflows" in raw and isinstance(raw["workflows"], dict):
        workflows = {**raw["workflows"], **{k: v for k, v in workflows.items() if k != "workflows"}}
    return fields, workflows


class TaskSpec(BaseModel):
    """A whole task: `main` plus any other named workflows (every unknown top-level key is one)."""

    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(min_length=1, max_length=255)]
    description: str = ""
    input_schema: JsonField | None = None
    tools: list[ToolDef] = Field(default_factory=list)
    inherit_tools: bool = True
    metadata: JsonField = Field(default_factory=dict)
    defaults: StepDefaults | None = None
    budget: Budget | None = None  # limits on the execution's model calls (contracts/budgets.py)
    guardrails: Guardrails | None = None  # run on the execution's input and final output
    callback_url: CallbackUrl | None = None  # its executions' default (docs/webhooks.md)
    workflows: dict[str, Annotated[list[Step], Field(min_length=1)]]

    @model_validator(mode="before")
    @classmethod
    def _collect_workflows(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return raw
        fields, workflows = split_task(raw)
        return {**fields, "workflows": workflows}

    @field_validator("workflows")
    @classmethod
    def _main_required(cls, workflows: dict[str, list[Step]]) -> dict[str, list[Step]]:
        if "main" not in workflows:
            raise ValueError(MAIN_REQUIRED)
        return workflows

    def to_document(self) -> JsonObject:
        """The task as users write it (named workflows at the top level), JSON-ready."""
        body = self.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"workflows"})
        for name, steps in self.workflows.items():
            body[name] = [dump_step(s) for s in steps]
        return body


# Parsed tasks a worker keeps, by their document's JSON text (so many, each up to this much text): every
# execution of a task, and every fan-out chunk of one, parses the same document, which costs more per step than
# running a pure step does. Nothing writes into a parsed task (its steps are frozen models): runs share one.
PARSED_TASKS = 32
PARSED_TEXT_LIMIT = 256 * 1024
_parsed: dict[str, TaskSpec] = {}


def parse_task(document: JsonObject) -> TaskSpec:
    """The task a stored document holds (ExecutionParams.task), parsed once per worker while it is kept."""
    text = json.dumps(document, ensure_ascii=False)
    task = _parsed.get(text)
    if task is None:
        task = TaskSpec.model_validate(document)
        if len(text) <= PARSED_TEXT_LIMIT:
            if len(_parsed) >= PARSED_TASKS:
                _parsed.clear()  # not an LRU: plain dict operations, safe from any workflow thread
            _parsed[text] = task
    return task
