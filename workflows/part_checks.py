"""Checks of a task's parts that would otherwise be taken and then ignored (README: nothing is reinterpreted
silently), run when a task is created (workflows/validate.py), never when it runs, so a task stored before
a check existed still runs as it did:

- `retry.non_retryable` names error types, and only the ones Mint has (contracts/failures.py);
- `wait_for_input.schema` is a JSON Schema (as an input_schema is);
- `wait_for_input.default` is the output when the wait times out with `on_timeout: continue`, and is refused
  without it (it would never be used);
- metadata's `x-tool-parameters` is a mapping of `<type>:<name>` to a mapping of arguments, or of an
  argument's name to its value (workflows/prompts.py); anything else would fix no argument. The API checks
  the metadata of agents, users, sessions and executions with it too.
"""

from __future__ import annotations

from typing import Any

from contracts.failures import ERROR_TYPES
from workflows import language as lang
from workflows.input_schema import schema_problems
from workflows.problems import Problem, Suggestions
from workflows.prompts import TOOL_PARAMETERS_KEY


def step_part_problems(step: lang.StepModel, path: str, suggest: Suggestions) -> list[Problem]:
    """The problems of a step's `retry` and `wait_for_input` parts."""
    problems = retry_problems(getattr(step, "retry", None), f"{path}.retry", suggest)
    if isinstance(step, lang.WaitForInputStep):
        wait = step.wait_for_input
        problems += schema_problems(wait.schema_, f"{path}.wait_for_input.schema")
        if "default" in wait.model_fields_set and wait.on_timeout != "continue":
            message = (
                "`default` is the output when the wait times out with `on_timeout: continue`; "
                f"this wait has `on_timeout: {wait.on_timeout}`, so it would never be used: "
                "add `on_timeout: continue` (and a `timeout`), or remove `default`"
            )
            problems.append(Problem(f"{path}.wait_for_input.default", message))
    return problems


def retry_problems(retry: lang.RetrySpec | None, path: str, suggest: Suggestions) -> list[Problem]:
    """Each name in `non_retryable` that is not an error type, with the closest one and the list."""
    problems = []
    for i, name in enumerate((retry.non_retryable if retry else None) or []):
        if name not in ERROR_TYPES:
            hint = suggest(name, ERROR_TYPES, ignore_case=False)
            message = f"unknown error type `{name}`{hint} (error types: {', '.join(sorted(ERROR_TYPES))})"
            problems.append(Problem(f"{path}.non_retryable[{i}]", message))
    return problems


def tool_parameters_problem(metadata: Any) -> tuple[tuple[str, ...], str] | None:
    """Where below `metadata` its `x-tool-parameters` is wrong, and why; None when it is right or absent."""
    if not isinstance(metadata, dict) or TOOL_PARAMETERS_KEY not in metadata:
        return None
    entries = metadata[TOOL_PARAMETERS_KEY]
    if not isinstance(entries, dict):
        return (TOOL_PARAMETERS_KEY,), (
            f"must be a mapping: `<type>:<tool name>` to a mapping of that tool's arguments (`function:search: "
            f"{{limit: 5}}`), or an argument's name to its value for every tool that has it; got "
            f"{_kind(entries)}"
        )
    for key, value in entries.items():
        if ":" in key and not isinstance(value, dict):
            return (TOOL_PARAMETERS_KEY, key), (
                f"must be a mapping of the arguments `{key}` takes to their values; got {_kind(value)}"
            )
    return None


def metadata_problems(metadata: Any, path: str) -> list[Problem]:
    """tool_parameters_problem as a Problem at `path` (a task's `metadata`)."""
    found = tool_parameters_problem(metadata)
    if found is None:
        return []
    below, message = found
    return [Problem(".".join([path, *below]), message)]


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    if value is None:
        return "null"
    return (
        "true or false"
        if isinstance(value, bool)
        else "a number"
        if isinstance(value, int | float)
        else "a value"
    )
