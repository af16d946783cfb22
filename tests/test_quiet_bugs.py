"""Quiet bugs: what a task or a request says is done or refused, never taken and ignored.

- `wait_for_input.default` is read as `info` beside it is (a value field: `$ "x"` is the text x), and refused
  without `on_timeout: continue`, where it would never be used;
- metadata whose `x-tool-parameters` would fix no argument is refused with its path, wherever metadata is
  taken (agents, users, sessions, tasks, executions);
- an expression limit names the limit, its value and the expression.
(Timed-out attempts and BudgetExceeded logging one line: tests/test_error_types.py.)"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.helpers import create_agent, create_task, run_task

BAD_PARAMETERS: list[tuple[Any, str, str]] = [
    (
        ["bad"],
        "x-tool-parameters",
        "must be a mapping: `<type>:<tool name>` to a mapping of that tool's arguments",
    ),
    ({"function:search": 5}, "x-tool-parameters.function:search", "must be a mapping of the arguments"),
]


def _wait(**wait: Any) -> dict[str, Any]:
    return {"name": "approve", "main": [{"wait_for_input": {"info": {"q": "$ 'ok?'"}, **wait}}]}


async def test_a_default_is_evaluated_as_info_is(api):
    wait = {
        "timeout": 0.5,
        "on_timeout": "continue",
        "default": {"by": '$ "x"', "n": "$ 1 + 1", "note": "none"},
    }
    execution, rows = await run_task(api, _wait(**wait))
    assert execution["status"] == "succeeded", execution
    assert execution["output"] == {"by": "x", "n": 2, "note": "none"}
    assert [r["type"] for r in rows] == ["init", "wait", "resume", "step", "finish"]
    assert rows[2]["metadata"] == {"timed_out": True, "wait_seq": 2}


async def test_a_default_is_checked_when_the_task_is_created(api):
    agent = await create_agent(api)
    wait = {"timeout": 5, "on_timeout": "continue", "default": "$ inptus[0]"}
    response = await api.post(f"/agents/{agent['id']}/tasks", json=_wait(**wait))
    assert response.status_code == 422, response.text
    (problem,) = response.json()["error"]["details"]
    assert problem["loc"] == "main[0].wait_for_input.default"
    assert problem["msg"] == "unknown name 'inptus': did you mean `inputs`?", problem


@pytest.mark.parametrize("wait", [{"timeout": 5, "default": "no"}, {"default": {"approved": False}}])
async def test_a_default_without_on_timeout_continue_is_refused(api, wait):
    agent = await create_agent(api)
    response = await api.post(f"/agents/{agent['id']}/tasks", json=_wait(**wait))
    assert response.status_code == 422, response.text
    (problem,) = response.json()["error"]["details"]
    assert problem["loc"] == "main[0].wait_for_input.default"
    assert problem["msg"] == (
        "`default` is the output when the wait times out with `on_timeout: continue`; this wait has "
        "`on_timeout: fail`, so it would never be used: add `on_timeout: continue` (and a `timeout`), or "
        "remove `default`"
    )


def _problem(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    (problem,) = response.json()["error"]["details"]
    assert problem["loc"] in response.json()["error"]["message"]
    return problem


@pytest.mark.parametrize("value, below, message", BAD_PARAMETERS)
async def test_bad_tool_parameters_are_refused_wherever_metadata_is_taken(api, value, below, message):
    metadata = {"x-tool-parameters": value}
    agent = await create_agent(api)
    answers = {
        "agent": await api.post("/agents", json={"name": "a", "metadata": metadata}),
        "agent update": await api.patch(f"/agents/{agent['id']}", json={"metadata": metadata}),
        "user": await api.post("/users", json={"name": "u", "metadata": metadata}),
        "session": await api.post("/sessions", json={"agent": agent["id"], "metadata": metadata}),
    }
    task = await create_task(api, agent["id"], {"name": "t", "main": [{"evaluate": {"x": "$ 1"}}]})
    answers["execution"] = await api.post(
        f"/tasks/{task['id']}/executions", json={"input": {}, "metadata": metadata}
    )
    for what, response in answers.items():
        problem = _problem(response)
        assert problem["loc"] == f"body.metadata.{below}", (what, problem)
        assert problem["msg"].startswith(message), (what, problem)

    task_body = {"name": "t", "metadata": metadata, "main": [{"evaluate": {"x": "$ 1"}}]}
    problem = _problem(await api.post(f"/agents/{agent['id']}/tasks", json=task_body))
    assert problem["loc"] == f"metadata.{below}" and problem["msg"].startswith(message), problem


async def test_good_tool_parameters_are_taken(api):
    metadata = {"x-tool-parameters": {"function:search": {"limit": 5}, "favorite": "Emma Stone"}}
    response = await api.post("/agents", json={"name": "a", "metadata": metadata})
    assert response.status_code == 201, response.text
    assert response.json()["metadata"] == metadata


async def test_an_expression_limit_names_the_limit_its_value_and_the_expression(api):
    source = "[a for a in range(200) for b in range(200)]"
    execution, _ = await run_task(api, {"name": "t", "main": [{"evaluate": {"x": f"$ {source}"}}]})
    assert execution["error"] == (
        f"LimitExceeded: a comprehension may generate at most 10000 elements (its loops, all together) (in {source!r})"
    )
