"""How a step stops early, and what the user reads when an execution fails.

StepFailed ends the execution with a message the user can act on; Returned carries a `return` step's
value up to the run of its workflow. Shared by the interpreter and the modules it delegates to.
"""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

from contracts.failures import ERROR_TYPES, error_type_of, typed_message
from workflows.sandbox.expressions import ExpressionError
from workflows.transition_log import UnrecordableValue


class StepFailed(Exception):
    """A step failed in a way the user must fix (bad expression, `error` step, unavailable feature)."""


class TypedFailure(StepFailed):
    """A failure of a named kind (contracts/failures.py): its text starts with the kind."""

    def __init__(self, error_type: str, message: str):
        self.error_type = error_type
        super().__init__(typed_message(error_type, message))

    def details(self) -> dict[str, Any]:
        """What the `error` transition's metadata records beside `error_type` (a guardrail's name, say)."""
        return {}


class Returned(Exception):
    """Unwinds a named workflow when a `return` step runs."""

    def __init__(self, value: Any):
        self.value = value


def failure_message(exc: Exception) -> str:
    """What the user reads in `execution.error` and the `error` transition."""
    if isinstance(exc, StepFailed | ExpressionError | UnrecordableValue):
        return str(exc)
    if isinstance(exc, ChildWorkflowError) and isinstance(exc.cause, ApplicationError):
        return exc.cause.message  # a fan-out chunk's failure, already worded for the user
    if isinstance(exc, ApplicationError):
        return exc.message  # a local activity's (the transition writer's), already worded for the user
    if isinstance(exc, ActivityError):
        cause = exc.cause
        if isinstance(cause, ApplicationError) and cause.type in ERROR_TYPES:
            return typed_message(cause.type, cause.message)  # an activity's failure of a named kind
        detail = cause.message if isinstance(cause, ApplicationError) else str(cause or exc)
        return f"{exc.activity_type or 'activity'} failed: {detail}"
    return f"internal error in Mint: {type(exc).__name__}: {exc}"


def failure_type(message: str) -> str | None:
    """The kind of failure a user-facing message names (its prefix), for the `error` transition's
    metadata; an activity's typed ApplicationError is worded `Type: ...` by failure_message too."""
    return error_type_of(message)


def failed_tool(name: str, exc: Exception) -> StepFailed:
    """The failure of a step whose tool (called by the model) failed and says `on_error: fail`: a
    ToolCallError, unless the failure already has a kind."""
    if isinstance(exc, TypedFailure):
        return exc
    return TypedFailure(
        "ToolCallError", f"tool {name!r} failed (its on_error is fail): {failure_message(exc)}"
    )


def tool_error_code(exc: Exception) -> str:
    """The code of a tool's error result: the failure's type, when the activity named one."""
    cause = exc.cause if isinstance(exc, ActivityError) else None
    if isinstance(cause, ApplicationError) and cause.type:
        return cause.type
    return "step_failed" if isinstance(exc, StepFailed) else "tool_failed"
