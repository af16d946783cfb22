"""How a step stops early, and what the user reads when an execution fails.

StepFailed ends the execution with a message the user can act on; Returned carries a `return` step's
value up to the run of its workflow. Shared by the interpreter and the modules it delegates to.
"""

from __future__ import annotations

from typing import Any

from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    FailureError,
)
from temporalio.exceptions import TimeoutError as ActivityTimeout

from contracts.failures import ERROR_TYPES, error_type_of, typed_message, with_type
from contracts.json import JsonObject
from expressions.parsing import ExpressionError
from workflows.transition_log import UnrecordableValue


class StepFailed(Exception):
    """A step failed in a way the user must fix (a tool not defined, an unavailable feature): a `StepFailed`
    unless its text names another kind (contracts/failures.py)."""


class TypedFailure(StepFailed):
    """A failure of a named kind (contracts/failures.py): its text starts with the kind."""

    def __init__(self, error_type: str, message: str):
        self.error_type = error_type
        super().__init__(typed_message(error_type, message))

    def details(self) -> JsonObject:
        """What the `error` transition's metadata records beside `error_type` (a guardrail's name, say)."""
        return {}


def limit_failure(where: str, exc: Exception) -> TypedFailure:
    """A sandbox limit's failure, said at `where` (`main[1]: tool 'post': ...`)."""
    return TypedFailure("LimitExceeded", f"{where}: {str(exc).removeprefix('LimitExceeded: ')}")


class Returned(Exception):
    """Unwinds a named workflow when a `return` step runs."""

    def __init__(self, value: Any):
        self.value = value


def failure_message(exc: Exception) -> str:
    """What the user reads in `execution.error` and the `error` transition: always `Type: message`, the type
    one of contracts/failures.py's."""
    if isinstance(exc, StepFailed):
        return with_type(str(exc), "StepFailed")
    if isinstance(exc, ExpressionError):
        return with_type(str(exc), "ExpressionError")  # a sandbox limit's text names LimitExceeded already
    if isinstance(exc, UnrecordableValue):
        return with_type(str(exc), "LimitExceeded")
    if isinstance(exc, ChildWorkflowError) and isinstance(exc.cause, ApplicationError):
        # a fan-out chunk's failure, already worded for the user
        return with_type(exc.cause.message, _known(exc.cause.type))
    if isinstance(exc, ApplicationError):
        # a local activity's (the transition writer's), already worded for the user
        return with_type(exc.message, _known(exc.type))
    if isinstance(exc, ActivityError):
        cause = exc.cause
        if isinstance(cause, ApplicationError) and cause.type in ERROR_TYPES:
            return typed_message(cause.type, cause.message)  # an activity's failure of a named kind
        if isinstance(cause, ActivityTimeout):
            return typed_message("StepTimeout", cause.message)  # worded by timed_out below
        detail = (
            f"{cause.type}: {cause.message}" if isinstance(cause, ApplicationError) else str(cause or exc)
        )
        return typed_message("InternalError", f"{exc.activity_type or 'activity'} failed: {detail}")
    return typed_message("InternalError", f"internal error in Mint: {type(exc).__name__}: {exc}")


def _known(error_type: str | None) -> str:
    return error_type if error_type in ERROR_TYPES else "InternalError"


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
    if isinstance(cause, ActivityTimeout):
        return "StepTimeout"
    return "step_failed" if isinstance(exc, StepFailed) else "tool_failed"


# What a task's `retry.non_retryable: [StepTimeout]` means to Temporal: its names for an attempt's timeouts.
TIMEOUT_TYPES = ("TemporalTimeout:StartToClose", "TemporalTimeout:Heartbeat")


def timed_out(exc: ActivityError, what: str, seconds: float, policy: RetryPolicy) -> ActivityError:
    """A call's timeout in the user's words (`what: timed out after 2 s, attempt 3 of 3`), never Temporal's
    (`activity StartToClose timeout`); other failures as they are."""
    cause = exc.cause
    if not isinstance(cause, ActivityTimeout):
        return exc
    if cause.type is not None and cause.type.name == "HEARTBEAT":
        text = f"{what}: the worker running it stopped answering (no heartbeat)"
    else:
        text = f"{what}: timed out after {seconds:g} s"
    state = exc.retry_state.name if exc.retry_state is not None else None
    not_retried = set(TIMEOUT_TYPES) & set(policy.non_retryable_error_types or ())
    if state == "NON_RETRYABLE_FAILURE" or (state != "MAXIMUM_ATTEMPTS_REACHED" and not_retried):
        text += ", not retried (the step's retry.non_retryable lists StepTimeout)"
    else:  # a call in the worker reports no retry state: it too ends a timeout's retries at the last attempt
        text += f", attempt {policy.maximum_attempts} of {policy.maximum_attempts}"
    error = ActivityError(
        exc.message,
        scheduled_event_id=exc.scheduled_event_id,
        started_event_id=exc.started_event_id,
        identity=exc.identity,
        activity_type=exc.activity_type,
        activity_id=exc.activity_id,
        retry_state=exc.retry_state,
    )
    error.__cause__ = ActivityTimeout(text, type=cause.type, last_heartbeat_details=[])
    return error


def was_cancelled(exc: BaseException) -> bool:
    """Whether an activity's failure is only its cancellation: the workflow cancelled it (the execution was
    cancelled, or a fan-out stopped its other items), so the step is cancelled, not failed."""
    return isinstance(exc, ActivityError) and isinstance(exc.cause, CancelledError)


def as_activity_error(name: str, exc: FailureError) -> ActivityError:
    """A call in the worker's failure as a queued call's would read: an ActivityError of the named activity
    whose cause is what the call raised (a local activity fails with that error itself, or with an
    ActivityError of call_in_worker around it)."""
    cause = exc.cause if isinstance(exc, ActivityError) else exc
    if isinstance(cause, ActivityTimeout) and cause.type is not None:
        # As Temporal words a queued activity's: "activity StartToClose timeout".
        kind = "".join(word.capitalize() for word in cause.type.name.split("_"))
        cause = ActivityTimeout(f"activity {kind} timeout", type=cause.type, last_heartbeat_details=[])
    error = ActivityError(
        exc.message,
        scheduled_event_id=0,
        started_event_id=0,
        identity="",
        activity_type=name,
        activity_id="",
        retry_state=exc.retry_state if isinstance(exc, ActivityError) else None,
    )
    error.__cause__ = cause
    return error
