"""The kinds of failure an execution, a step or a chat names (seed 004, JAF's typed errors), declared once: the
kind is the error text's prefix (`BudgetExceeded: ...`), the `error_type` in an execution's `error`
transition's metadata, an activity's ApplicationError `type`, and a chat's error answer's `type`. A task's
`retry.non_retryable` may name any of them (and only them). Pure data: the workflows, the activities and the
services all read this one list; tests/test_error_types.py checks that every kind the code raises is in it.
"""

from __future__ import annotations

# name -> what it means, in the user's words (docs/task-language.md's table of error types is this list).
ERROR_KINDS: dict[str, str] = {
    # The agent framework's (JAF's) kinds.
    "MaxTurnsExceeded": "a tool loop still asked for tools after its last allowed round",
    "ModelBehaviorError": "the model answered in a way the step cannot use",
    "DecodeError": "an answer that should be JSON (of a schema) is not",
    "InputGuardrailTripwire": "an input guardrail refused the input",
    "OutputGuardrailTripwire": "an output guardrail refused the output",
    "ToolCallError": "a tool the model called failed and its `on_error` is `fail`",
    "HandoffError": "a handoff to an agent that is not among the handoffs",
    "BudgetExceeded": "the next model call would pass the task's or session's budget",
    # The task language's.
    "ExpressionError": "an expression or template failed: a syntax error, an unknown name or key, a Python "
    "error such as ZeroDivisionError",
    "LimitExceeded": "an expression, template or step passed one of the sandbox's limits (operations, CPU, "
    "sizes, nesting); the message names the limit and its value",
    "StepFailed": "a step cannot run as written: a tool that is not defined, an argument of the wrong type, a "
    "feature that is not available",
    "TaskError": "an `error` step ran; the message is the task's own",
    "StepTimeout": "every attempt of a call timed out (`timed out after 2 s, attempt 3 of 3`)",
    "WaitTimeout": "a `wait_for_input` got no input within its `timeout` (and its `on_timeout` is `fail`)",
    # Calls out: the request is wrong or refused (never retried).
    "BadToolCall": "a tool's arguments or definition cannot make a call",
    "BadCall": "a call cannot run where it was sent",
    "BadSystemCall": "a `system` tool call is missing an argument or names the wrong thing",
    "UnknownSystemOperation": "a `system` tool names an operation Mint does not have",
    "SystemCallRefused": "a `system` operation refused the call",
    "BadSearch": "a search's arguments are not valid",
    "EgressRefused": "an address the egress policy refuses (loopback, private, not http(s)); "
    "MINT_EGRESS_ALLOW lists exceptions",
    "RedirectRefused": "a redirect the call may not follow",
    "BadRedirect": "a redirect to a URL that is not valid",
    "ResponseTooLarge": "an answer larger than a call may bring back",
    "ResponseTooDeep": "an answer nested deeper than a call may bring back",
    "BadAnswer": "a service answered something that cannot be read",
    "BadData": "a value that cannot be stored",
    "SecretNotFound": "a secret the call names does not exist",
    "SecretsUnavailable": "secrets cannot be read (the key that encrypts them is missing or wrong)",
    "ModelNotConfigured": "no model provider is configured for the model the step names",
    "ModelRequestRefused": "the model provider refused the request (4xx)",
    "UnsupportedTool": "a model was offered a tool its provider does not take",
    "McpRefused": "an MCP server cannot be reached as configured",
    "McpToolError": "an MCP tool answered with an error",
    "IntegrationRefused": "an integration's service refused the call",
    "IntegrationUnavailable": "an integration needs something this worker does not have",
    "EmailRefused": "the mail server refused the message",
    "BrowserRefused": "the browser refused a command",
    "NavigationFailed": "the browser could not open the page",
    "EmbeddingFailed": "a text could not be embedded",
    "BudgetUnknown": "a model call belongs to no execution whose budget it could count against",
    "UnsealedPayload": "a Temporal payload that is not sealed by Mint's codec",
    "BadCallbackUrl": "a webhook's callback_url cannot be sent to (its delivery stops)",
    # Calls out: the service is unavailable or slow (retried by the step's `retry`).
    "HttpUnavailable": "an HTTP server answered 429 or 5xx, or could not be reached",
    "HttpTimeout": "an `api_call` did not finish within its own `timeout`",
    "ModelUnavailable": "the model provider is unavailable (429, 5xx, a network error)",
    "InvalidModelOutput": "the model's answer could not be read",
    "SystemUnavailable": "a `system` operation is unavailable",
    "IntegrationTimeout": "an integration's service did not answer in time",
    "EmailUnavailable": "the mail server cannot be reached",
    "BrowserUnavailable": "the browser cannot be reached",
    "WebhookUnreachable": "a webhook's receiver could not be reached (the delivery is retried up to 24 h)",
    "WebhookRefused": "a webhook's receiver answered other than 2xx (the delivery is retried up to 24 h)",
    # The execution itself.
    "ExecutionLost": "the execution's workflow never started, or ended outside Mint (terminated in Temporal)",
    "InvalidTransition": "a transition that cannot follow the previous one (a bug in Mint)",
    "InternalError": "a bug in Mint; the message says where",
}
ERROR_TYPES = frozenset(ERROR_KINDS)
# The kinds a failure of the service (not of the request) has: retried by a step's `retry` unless its
# `non_retryable` lists them.
RETRIED_TYPES = frozenset(
    {
        "HttpUnavailable",
        "HttpTimeout",
        "ModelUnavailable",
        "InvalidModelOutput",
        "SystemUnavailable",
        "IntegrationTimeout",
        "EmailUnavailable",
        "BrowserUnavailable",
        "StepTimeout",
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


def with_type(message: str, default: str) -> str:
    """`message` with its kind: as it is when it names one, else `default: message`."""
    return message if error_type_of(message) else typed_message(default, message)
