"""`durability: run` (workflows/step_runs.py, activities/step_runs.py) through an attacker's eyes: what a
tenant writes in a task, and what a server it calls answers, are hostile. A run must refuse and fail exactly
as the same steps one by one do: refused addresses, missing secrets, answers Postgres cannot store, the
expression sandbox's limits, huge answers, and task documents that misuse the option."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.helpers import create_agent, run_task
from tests.local_http import Answer, LocalServer, Request

GET = {"name": "get", "type": "api_call", "api_call": {"url": "{{ arguments.url }}"}}
ONCE = {"max_attempts": 1}


def call(url: str) -> dict[str, Any]:
    return {"tool": "get", "arguments": {"url": url}, "retry": ONCE}


def task(main: list[dict], durability: str | None, tools: list[dict] | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {"name": "hostile", "tools": tools or [GET], "main": main}
    if durability is not None:
        document["defaults"] = {"durability": durability}
    return document


def around(server: LocalServer, middle: dict) -> list[dict]:
    """`middle` after a call to `server` and an evaluate, with a call to it after: one run in `run` mode."""
    return [call(server.url + "a"), {"evaluate": {"x": "$ 1"}}, middle, call(server.url + "b")]


def seen(rows: list[dict]) -> list[tuple]:
    """What the transitions of two executions of the same steps share."""
    return [(r["type"], r["current"]["step"], r["step_label"]) for r in rows]


async def both(api, main: list[dict], tools: list[dict] | None = None) -> list[tuple[dict, list[dict]]]:
    """The same steps run one by one and as a run: each mode's execution and transitions."""
    agent = (await create_agent(api))["id"]
    return [await run_task(api, task(main, d, tools), {}, agent) for d in (None, "run")]


async def fails_alike(api, main: list[dict], tools: list[dict] | None = None) -> str:
    """Both modes fail, with the same error after the same transitions: the error."""
    (alone, alone_rows), (run, run_rows) = await both(api, main, tools)
    assert alone["status"] == run["status"] == "failed", (alone, run)
    assert run["error"] == alone["error"]
    assert seen(run_rows) == seen(alone_rows)
    return run["error"]


def answering(body: str, content_type: str):
    """A server that answers /bad with `body` (lone surrogates kept as they are), anything else its path."""

    def respond(request: Request) -> Answer:
        if request.path.endswith("/bad"):
            return 200, {"Content-Type": content_type}, body.encode("utf-8", "surrogatepass")
        return 200, {}, request.path.encode()

    return respond


# where a call may go and what it may carry ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),  # the cloud's metadata
        ("http://127.0.0.2:{port}/", "127.0.0.2"),  # loopback, but not the address the tests allow
        ("http://[::1]:{port}/", "::1"),
        ("http://0x7f000002:{port}/", "127.0.0.2"),  # loopback in another spelling
    ],
)
async def test_a_call_to_a_refused_address_fails_in_a_run_as_alone(api, url, address):
    with LocalServer() as server:
        error = await fails_alike(api, around(server, call(url.format(port=server.port))))
        assert [r.path for r in server.requests] == ["/a", "/a"]  # no call after the refused one
    assert error.startswith("EgressRefused: ") and f"resolves to {address}, which is not" in error, error


def secret_tool(server: LocalServer, name: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {{{{ secrets.{name} }}}}"}
    return {"name": "secret", "type": "api_call", "api_call": {"url": server.url + "s", "headers": headers}}


async def test_a_secret_that_does_not_exist_fails_in_a_run_as_alone(api):
    with LocalServer() as server:
        middle = {"tool": "secret", "arguments": {}, "retry": ONCE}
        error = await fails_alike(api, around(server, middle), [GET, secret_tool(server, "NO_SUCH_X1")])
        assert "/s" not in [r.path for r in server.requests]
    assert error.startswith("SecretNotFound: ") and "NO_SUCH_X1" in error, error


async def test_a_secret_a_server_echoes_back_is_redacted_in_a_run_as_alone(api):
    name, value = f"ECHOED_{uuid.uuid4().hex[:8].upper()}", f"canary-{uuid.uuid4().hex}"
    assert (await api.post("/secrets", json={"name": name, "value": value})).status_code == 201

    def echo(request: Request) -> Answer:
        return 200, {"Content-Type": "application/json"}, json.dumps(request.headers).encode()

    with LocalServer(echo) as server:
        middle = {"tool": "secret", "arguments": {}, "retry": ONCE}
        runs = await both(api, around(server, middle), [GET, secret_tool(server, name)])
        assert [r.headers["Authorization"] for r in server.requests if r.path == "/s"] == [
            f"Bearer {value}"
        ] * 2
    (alone, alone_rows), (run, run_rows) = runs
    assert alone["status"] == run["status"] == "succeeded", (alone["error"], run["error"])
    outputs = [[r["output"] for r in rows if r["current"]["step"] == 2] for rows in (alone_rows, run_rows)]
    assert outputs[0][0]["json"]["Authorization"] == outputs[1][0]["json"]["Authorization"]
    assert outputs[1][0]["json"]["Authorization"] == f"Bearer [secret {name}]"
    assert value not in json.dumps([alone_rows, run_rows])


# what a server answers ----------------------------------------------------------------------------------

BIG = 700_000  # characters of each JSON string answered: twice that in each output (its text and its JSON)


def huge(request: Request) -> Answer:
    return 200, {"Content-Type": "application/json"}, json.dumps(request.path[-1] * BIG).encode()


def activities_of(history: Any) -> list[str]:
    """The local activities of a workflow's history, by type, in order."""
    markers = [e.marker_recorded_event_attributes for e in history.events]
    return [json.loads(m.details["data"].payloads[0].data)["activity_type"] for m in markers if m.details]


async def huge_runs(api, temporal_env) -> tuple[list, list[list[str]]]:
    """Five calls answering 1.4 MB of output each, one by one and as a run: (executions, activities)."""
    lengths = {"lengths": "$ [len(o.json) for o in outputs]", "heads": "$ [o.json[:1] for o in outputs]"}
    with LocalServer(huge) as server:
        main = [call(server.url + n) for n in "abcde"] + [{"evaluate": lengths}]
        runs = await both(api, main)
        assert len(server.requests) == 10
    handles = [temporal_env.client.get_workflow_handle(execution["id"]) for execution, _ in runs]
    return runs, [activities_of(await handle.fetch_history()) for handle in handles]


async def test_answers_of_megabytes_split_the_run_and_the_execution_succeeds_as_alone(api, temporal_env):
    ((alone, alone_rows), (run, run_rows)), (_, in_run) = await huge_runs(api, temporal_env)
    assert alone["status"] == run["status"] == "succeeded", (alone["error"], run["error"])
    assert run["output"] == alone["output"] == {"lengths": [BIG] * 5, "heads": list("abcde")}
    assert seen(run_rows) == seen(alone_rows)
    assert in_run[0] == "run_steps_in_worker" and in_run.count("call_in_worker") < 5, in_run
    assert "call_in_worker" in in_run or in_run.count("run_steps_in_worker") > 1, in_run  # it split


async def test_the_steps_after_a_split_run_in_a_run_of_their_own(api, temporal_env):
    _, (_, in_run) = await huge_runs(api, temporal_env)
    assert in_run.count("run_steps_in_worker") == 2 and "call_in_worker" not in in_run, in_run


UNSTORABLE = [
    ('{"v": "a\\u0000b"}', "application/json", "NUL"),  # JSON's escape: the parsed value holds a NUL
    ("a\x00b", "text/plain", "NUL"),  # a NUL byte in the text itself
    ('{"v": "\\ud800"}', "application/json", "surrogate"),  # a lone surrogate, escaped
    ('{"v": NaN}', "application/json", "NaN"),  # Python's json reads it
]


@pytest.mark.parametrize(("body", "content_type", "problem"), UNSTORABLE)
async def test_an_answer_postgres_cannot_store_fails_a_run_as_it_fails_alone(
    api, body, content_type, problem
):
    with LocalServer(answering(body, content_type)) as server:
        error = await fails_alike(api, around(server, call(server.url + "bad")))
        assert [r.path for r in server.requests] == ["/a", "/bad", "/a", "/bad"]
    assert error.startswith("LimitExceeded: the output of main[2]") and problem in error, error


@pytest.mark.parametrize(("body", "content_type", "problem"), UNSTORABLE)
async def test_an_answer_postgres_cannot_store_fails_either_mode_clearly(api, body, content_type, problem):
    with LocalServer(answering(body, content_type)) as server:
        runs = await both(api, around(server, call(server.url + "bad")))
        assert [r.path for r in server.requests] == ["/a", "/bad", "/a", "/bad"]  # never the step after
    for execution, rows in runs:
        assert execution["status"] == "failed" and rows[-1]["type"] == "error", execution
        assert execution["error"].startswith(("LimitExceeded: ", "BadData: ")), execution["error"]
    assert problem in runs[0][0]["error"], runs[0][0]["error"]


# the expression sandbox ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("$ " + "-" * 1500 + "1", "expression nests too deeply"),  # parses, but nests past the stack
        ("$ sum(sum(range(100000)) for _ in range(1000))", "at most 120000 operations"),
        ("$ [list(range(100000)) for _ in range(100)]", "at most 120000 operations"),
        ("$ 'x' * 10**9", "longer than 1000000"),
        ("$ 9 ** 9 ** 9", "LimitExceeded"),
        ("$ [[[[[[[[[[outputs[0]['json']]]]]]]]]]]", "nested more than 128"),  # on an answer nested 120 deep
    ],
)
async def test_the_sandbox_stops_an_expression_in_a_run_as_alone(api, expression, says):
    def deep(request: Request) -> Answer:
        return 200, {"Content-Type": "application/json"}, b"[" * 120 + b"]" * 120

    with LocalServer(deep) as server:
        error = await fails_alike(api, around(server, {"evaluate": {"x": expression}}))
    assert error.startswith(("ExpressionError: ", "LimitExceeded: ")) and says in error, error


# the option itself --------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["fast", "RUN", "", 1, True, ["run"], {"run": True}])
async def test_an_invalid_durability_is_refused_at_creation_naming_where(api, value):
    agent = (await create_agent(api))["id"]
    fine = {"evaluate": {"x": "$ 1"}}
    documents = {
        "main[1].durability": {"name": "t", "main": [fine, {**fine, "durability": value}]},
        "defaults.durability": {"name": "t", "defaults": {"durability": value}, "main": [fine]},
    }
    for path, document in documents.items():
        response = await api.post(f"/agents/{agent}/tasks", json=document)
        assert 400 <= response.status_code < 500, response.text
        error = response.json()["error"]
        assert path in error["message"] and path in [d["loc"] for d in error["details"]], error
