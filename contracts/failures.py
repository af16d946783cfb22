"""The kinds of failure an execution or a chat names (seed 004, JAF's typed errors): the kind is the error
text's prefix (`BudgetExceeded: ...`) and, for an execution, the `error_type` in its `error` transition's
metadata; a chat's error answer carries it as `type`. Pure data: the workflows, the activities (as an
ApplicationError's `type`) and the services all read this one list."""

from __future__ import annotations

ERROR_TYPES = frozenset(
    {
        "MaxTurnsExceeded",  # a tool loop still asked for tools after its last allowed round
        "ModelBehaviorError",  # the model answered in a way the step cannot use
        "DecodeError",  # an answer that should be JSON (of a schema) is not
        "InputGuardrailTripwire",  # an input guardrail refused the input
        "OutputGuardrailTripwire",  # an output guardrail refused the output
        "ToolCallError",  # a tool the model called failed in a way the model cannot recover from
        "HandoffError",  # a handoff to an agent that is not among the handoffs
        "BudgetExceeded",  # the next model call would pass the budget
    }
)


def typed_message(error_type: str, message: str) -> str:
    """`Type: message`, the text a user reads."""
    assert error_type in ERROR_TYPES, f"unknown error type {error_type}"
    return f"{error_type}: {message}"


def error_type_of(message: str) -> str | None:
    """The kind a typed message names, if it names one."""
    head, sep, _ = message.partition(": ")
    return head if sep and head in ERROR_TYPES else None
