"""The readers of the records the Store answers for tasks, executions and transitions
(contracts/records/tasks.py, contracts/records/executions.py): each reads its row with the column readers of
infra/store/rows.py."""

from __future__ import annotations

from contracts.json import JsonObject
from contracts.records.executions import Execution, OpenWait, Position, QuietExecution, Transition
from contracts.records.tasks import TaskVersion
from infra.store.rows import (
    Row,
    integer,
    json_object,
    json_value,
    moment,
    number,
    optional_object,
    optional_text,
    text,
)


def read_task_version(row: Row, version: int | None = None) -> TaskVersion:
    """The task row (with its version's document); `version` names the version the document is of."""
    return TaskVersion(
        id=text(row, "id"),
        version=integer(row, "version") if version is None else version,
        agent_id=text(row, "agent_id"),
        dialect=text(row, "dialect"),
        document=json_object(row, "document"),
        created_at=moment(row, "created_at"),
        updated_at=moment(row, "updated_at"),
    )


def read_execution(row: Row) -> Execution:
    return Execution(
        id=text(row, "id"),
        task_id=text(row, "task_id"),
        task_version=integer(row, "task_version"),
        status=text(row, "status"),
        input=json_value(row, "input"),
        metadata=json_object(row, "metadata"),
        created_at=moment(row, "created_at"),
        updated_at=moment(row, "updated_at"),
        output=json_value(row, "output"),
        error=optional_text(row, "error"),
        transition_count=integer(row, "transition_count", 0),
        prompt_tokens=integer(row, "prompt_tokens", 0),
        completion_tokens=integer(row, "completion_tokens", 0),
        cost=number(row, "cost", 0.0),
        restarted_from=optional_text(row, "restarted_from"),
        callback_url=optional_text(row, "callback_url"),
        task_name=optional_text(row, "task_name"),
    )


def read_position(value: JsonObject | None) -> Position | None:
    """A stored position (`current`, `next`); None for none."""
    if value is None:
        return None
    return Position(text(value, "workflow"), integer(value, "step"), text(value, "scope_id"))


def read_transition(row: Row) -> Transition:
    current = read_position(json_object(row, "current"))
    if current is None:
        raise TypeError("stored current is null")
    return Transition(
        id=text(row, "id"),
        execution_id=text(row, "execution_id"),
        seq=integer(row, "seq"),
        type=text(row, "type"),
        output=json_value(row, "output"),
        current=current,
        next=read_position(optional_object(row, "next")),
        step_label=optional_text(row, "step_label"),
        metadata=json_object(row, "metadata"),
        created_at=moment(row, "created_at"),
    )


def read_quiet_execution(row: Row) -> QuietExecution:
    return QuietExecution(
        id=text(row, "id"),
        developer_id=text(row, "developer_id"),
        status=text(row, "status"),
        task_id=optional_text(row, "task_id"),
        callback_url=optional_text(row, "callback_url"),
    )


def read_open_wait(row: Row) -> OpenWait:
    """A `wait` transition as an open wait: its output holds `info` (and `schema`), or the `tool_call` a
    prompt step's function tool asks the client to run."""
    wait = read_transition(row)
    output = wait.output if isinstance(wait.output, dict) else {}
    schema = output.get("schema")
    return OpenWait(
        id=wait.id,
        seq=wait.seq,
        step=wait.step_label or f"{wait.current.workflow}[{wait.current.step}]",
        info=output["info"] if "info" in output else output.get("tool_call"),
        schema=schema if isinstance(schema, dict) else None,
        opened_at=wait.created_at,
    )
