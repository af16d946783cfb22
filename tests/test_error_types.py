"""Every failure names its type (seed 004): one list of error types (contracts/failures.py);
every failed execution carries one in its error's prefix (`Type: message`), in its `error` transition's
`error_type` and in the API's `error`; a timeout reads in seconds and attempts, never in Temporal's words;
`retry.non_retryable` names are checked against the list when the task is created; expected failures log
one line, without a traceback."""

from __future__ import annotations

import ast
import logging
from pathlib import Path
from typing import Any

import pytest

from contracts.failures import ERROR_KINDS, ERROR_TYPES
from tests.helpers import create_agent, run_task
from tests.test_retries import Flaky

ROOT = Path(__file__).parent.parent


def _fetch(url: str, **step: Any) -> dict[str, Any]:
    return {
        "name": "call",
        "tools": [{"name": "fetch", "type": "api_call", "api_call": {"method": "GET", "url": url}}],
        "main": [{"tool": "fetch", "arguments": {}, **step}],
    }


def _raised_kinds() -> dict[str, str]:
    """Every error type the code raises on purpose (errors.permanent/transient, an ApplicationError's `type`,
    a service error's `error_type`, a TypedFailure), with where."""
    found: dict[str, str] = {}
    for package in ("api", "services", "mint", "workflows", "activities", "contracts"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                if name in ("permanent", "transient", "TypedFailure") and len(node.args) >= 2:
                    arg = node.args[1] if name != "TypedFailure" else node.args[0]
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        found[arg.value] = f"{path.relative_to(ROOT)}:{node.lineno}"
                for keyword in node.keywords:
                    value = keyword.value
                    if keyword.arg in ("type", "error_type") and isinstance(value, ast.Constant):
                        found[str(value.value)] = f"{path.relative_to(ROOT)}:{node.lineno}"
    return found


def test_every_error_type_the_code_raises_is_in_the_one_list():
    unlisted = {kind: where for kind, where in _raised_kinds().items() if kind not in ERROR_TYPES}
    assert not unlisted, f"error types raised but not in contracts/failures.py's ERROR_KINDS: {unlisted}"
    assert all(description.strip() for description in ERROR_KINDS.values())


@pytest.mark.parametrize(
    "steps, error_type, text",
    [
        ([{"evaluate": {"x": "$ 1/0"}}], "ExpressionError", "ZeroDivisionError: division by zero (in '1/0')"),
        ([{"evaluate": {"x": "$ _.nope"}}], "ExpressionError", "no key 'nope' (keys: none) (in '_.nope')"),
        (
            [{"evaluate": {"x": "$ {'apple': 1}['kiwi']"}}],
            "ExpressionError",
            "no item 'kiwi' in dict with keys 'apple' (in \"{'apple': 1}['kiwi']\")",
        ),
        (
            [{"evaluate": {"x": "$ list(range(10**7))"}}],
            "LimitExceeded",
            "range of 10000000 items is over the limit of 100000 (in 'list(range(10**7))')",
        ),
        (
            [{"evaluate": {"x": "$ [a for a in range(200) for b in range(200)]"}}],
            "LimitExceeded",
            "a comprehension may generate at most 10000 elements (its loops, all together) "
            "(in '[a for a in range(200) for b in range(200)]')",
        ),
        (
            [{"wait_for_input": {"info": {"q": "$ 'ok?'"}, "timeout": 0.5}}],
            "WaitTimeout",
            "main[0]: no input within 0.5 seconds",
        ),
        ([{"error": "$ 'boom ' + str(1 + 1)"}], "TaskError", "boom 2"),
        (
            [{"sleep": "$ 'soon'"}],
            "StepFailed",
            "sleep needs a number of seconds, got 'soon'",
        ),
    ],
)
async def test_a_failed_step_names_its_type_in_the_error_the_transition_and_the_api(
    api, steps, error_type, text
):
    execution, rows = await run_task(api, {"name": "t", "main": steps})
    assert execution["status"] == "failed", execution
    assert execution["error"] == f"{error_type}: {text}", execution["error"]
    assert rows[-1]["type"] == "error" and rows[-1]["output"]["error"] == execution["error"]
    assert rows[-1]["metadata"]["error_type"] == error_type
    assert (await api.get(f"/executions/{execution['id']}")).json()["error"] == execution["error"]


async def test_a_refused_tool_call_names_its_type_not_the_activity(api):
    execution, rows = await run_task(api, _fetch("http://10.1.2.3/"))
    assert execution["status"] == "failed"
    assert execution["error"] == (
        "EgressRefused: 10.1.2.3 resolves to 10.1.2.3, which is not a public address; list it in "
        "MINT_EGRESS_ALLOW to allow it"
    ), execution["error"]
    assert rows[-1]["metadata"] == {"error_type": "EgressRefused"}


async def test_a_server_error_after_the_last_attempt_names_its_type(api):
    server = Flaky(failures=5)
    try:
        retry = {"max_attempts": 2, "initial_interval": 0.05}
        execution, rows = await run_task(api, _fetch(server.url, retry=retry))
    finally:
        server.close()
    assert execution["error"] == f"HttpUnavailable: {server.url} answered 500", execution["error"]
    assert rows[-1]["metadata"] == {"error_type": "HttpUnavailable"} and server.calls == 2


@pytest.mark.parametrize("local", [True, False], ids=["in the worker", "queued"])
async def test_a_step_timeout_says_seconds_and_attempts_in_the_users_words(api, local, caplog):
    server = Flaky(delay=3)
    retry = {"max_attempts": 3, "initial_interval": 0.05}
    try:
        with caplog.at_level(logging.DEBUG):
            execution, rows = await run_task(api, _fetch(server.url, timeout=0.5, retry=retry, local=local))
    finally:
        server.close()
    assert execution["status"] == "failed", execution
    assert execution["error"] == (
        "StepTimeout: main[0] · tool fetch (api_call): timed out after 0.5 s, attempt 3 of 3"
    ), execution["error"]
    assert "StartToClose" not in execution["error"] and server.calls == 3
    assert rows[-1]["metadata"] == {"error_type": "StepTimeout"}
    # Each timed-out attempt is one line in the worker's log, and no traceback.
    lines = [r for r in caplog.records if r.name == "mint.activities" and "StepTimeout" in r.getMessage()]
    assert len(lines) == 3, [r.getMessage() for r in lines]
    assert "timed out after 0.5 s" in lines[0].getMessage()
    noisy = [r for r in caplog.records if r.name.startswith("temporalio") and r.levelno >= logging.WARNING]
    assert not [r for r in noisy if r.exc_info], [r.getMessage() for r in noisy]


async def test_non_retryable_step_timeout_stops_after_the_first_timeout(api):
    server = Flaky(delay=3)
    retry = {"max_attempts": 3, "initial_interval": 0.05, "non_retryable": ["StepTimeout"]}
    try:
        execution, _ = await run_task(api, _fetch(server.url, timeout=0.5, retry=retry, local=False))
    finally:
        server.close()
    assert execution["error"] == (
        "StepTimeout: main[0] · tool fetch (api_call): timed out after 0.5 s, not retried (the step's "
        "retry.non_retryable lists StepTimeout)"
    ), execution["error"]
    assert server.calls == 1


@pytest.mark.parametrize(
    "where, retry_at, path",
    [
        ("step", lambda task, retry: task["main"][0].update(retry=retry), "main[0].retry.non_retryable[1]"),
        (
            "defaults",
            lambda task, retry: task.update(defaults={"retry": retry}),
            "defaults.retry.non_retryable[1]",
        ),
    ],
)
async def test_unknown_non_retryable_names_are_refused_with_the_known_types(api, where, retry_at, path):
    agent = await create_agent(api)
    task = _fetch("http://example.com/")
    retry_at(task, {"non_retryable": ["HttpUnavailable", "HttpTimout"]})
    response = await api.post(f"/agents/{agent['id']}/tasks", json=task)
    assert response.status_code == 422, response.text
    (problem,) = response.json()["error"]["details"]
    assert problem["loc"] == path
    assert problem["msg"].startswith(
        "unknown error type `HttpTimout`: did you mean `HttpTimeout`? (error types: "
    )
    assert "StepTimeout" in problem["msg"] and "EgressRefused" in problem["msg"]

    retry_at(task, {"non_retryable": ["HttpUnavailable", "StepTimeout"]})
    assert (await api.post(f"/agents/{agent['id']}/tasks", json=task)).status_code == 201


async def test_budget_exceeded_logs_one_line_without_a_traceback(mapi, caplog):
    task = {
        "name": "two prompts",
        "budget": {"max_model_calls": 1},
        "main": [{"prompt": "first", "unwrap": True}, {"prompt": "second", "unwrap": True}],
    }
    with caplog.at_level(logging.DEBUG):
        execution, rows = await run_task(mapi, task)
    assert (
        execution["error"].startswith("BudgetExceeded: ")
        and rows[-1]["metadata"]["error_type"] == "BudgetExceeded"
    )
    lines = [r for r in caplog.records if r.name == "mint.activities" and "BudgetExceeded" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.INFO and not lines[0].exc_info
    noisy = [r for r in caplog.records if r.name.startswith("temporalio") and r.levelno >= logging.WARNING]
    assert not [r for r in noisy if r.exc_info], [r.getMessage() for r in noisy]


def test_the_readme_lists_every_error_type_with_its_meaning() -> None:
    readme = (Path(__file__).parent.parent / "docs" / "task-language.md").read_text()  # its Errors table
    for name, meaning in ERROR_KINDS.items():
        assert f"| `{name}` | {meaning}" in readme, f"README's Errors table lacks {name}"
