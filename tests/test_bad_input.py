"""Bad tasks and bad requests: each is a 4xx (never a 5xx) with a JSON error naming what is wrong and where."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest

from expressions.data import MAX_DEPTH
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status

STUCK = {"queued", "starting"}
JSON = {"Content-Type": "application/json"}
OK = [{"evaluate": {"x": "$ 1"}}]


async def settle(response: httpx.Response) -> None:
    """After a 5xx, let the server thread finish logging its traceback before this test fails.

    The stack runs in this process, and Python 3.11's traceback formatting calls ast.parse; two threads
    parsing at once can raise SystemError ("AST constructor recursion depth mismatch") inside pytest's reporter.
    """
    if response.status_code >= 500:
        await asyncio.sleep(0.5)


async def expect_client_error(response: httpx.Response) -> None:
    await settle(response)
    assert 400 <= response.status_code < 500, (response.status_code, response.text)


async def expect_error(
    response: httpx.Response, status: int, path: str | None = None, contains: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Assert a JSON error with this status; `path` must be listed in `problems` and named in `error`."""
    await settle(response)
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    error = body.get("error")  # Julep's shape: {"message", "code", "type", "details"}
    assert isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"].strip(), (
        body
    )
    assert error["code"] == ("validation_error" if status == 422 else f"http_{status}"), body
    assert body["detail"] == error["message"], body
    if path is not None:
        assert path in [p["loc"] for p in error.get("details") or []], body
        assert path in body["error"]["message"], body
    for text in contains:
        assert text in body["error"]["message"], body
    return body


async def assert_nothing_stuck(api: httpx.AsyncClient, task_id: str) -> list[dict[str, Any]]:
    """No execution of the task is left `queued` or `starting` (a failed start must say so)."""
    # A fresh connection: after a server error the keep-alive connection of `api` may be closed.
    async with httpx.AsyncClient(base_url=api.base_url, headers=api.headers, timeout=30) as client:
        response = await client.get(f"/tasks/{task_id}/executions", params={"limit": 1000})
    assert response.status_code == 200, response.text
    executions = response.json()["items"]
    assert not [e for e in executions if e["status"] in STUCK], executions
    return executions


@pytest.fixture
async def agent_id(api: httpx.AsyncClient) -> str:
    return (await create_agent(api))["id"]


async def fresh_client(stack: Any, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


# Bad tasks -----------------------------------------------------------------------------------------------------


def case(id_: str, document: dict[str, Any], path: str, *contains: str) -> Any:
    return pytest.param(document, path, contains, id=id_)


BAD_TASKS = [
    case(
        "missing_main",
        {"name": "t"},
        "main",
        "main",
    ),
    case("missing_name", {"main": OK}, "name", "missing"),
    case("main_not_a_list", {"name": "t", "main": {"evaluate": {"x": "$ 1"}}}, "main", "list of steps"),
    case("main_empty", {"name": "t", "main": []}, "main", "at least one"),
    case("unknown_step_key", {"name": "t", "main": [{"bogus": 1}]}, "main[0]", "not a step"),
    case("step_not_a_mapping", {"name": "t", "main": ["just text"]}, "main[0]", "not a step"),
    case(
        "second_kind_on_step",  # a missing `-`; other unknown keys are ignored with a warning (test_dialect.py)
        {"name": "t", "main": [{"evaluate": {"x": "$ 1"}, "then": [{"log": "x"}]}]},
        "main[0].then",
        "each step has one kind",
    ),
    case("evaluate_not_a_mapping", {"name": "t", "main": [{"evaluate": "x"}]}, "main[0].evaluate"),
    case(
        "expression_syntax_error",
        {"name": "t", "main": [{"evaluate": {"x": "$ 1 +"}}]},
        "main[0].evaluate.x",
        "syntax error",
    ),
    case(
        "unknown_name_seed_dialect",  # Python by Julep's rule (names `inputs[`); `foo + 1` alone is text
        {"name": "t", "main": [{"evaluate": {"x": "inputs[0] + foo"}}]},
        "main[0].evaluate.x",
        "unknown name 'foo'",
    ),
    case(
        "unknown_name_dollar_dialect",
        {"name": "t", "main": [{"evaluate": {"x": "$ foo"}}]},
        "main[0].evaluate.x",
        "unknown name 'foo'",
    ),
    case(
        "dunder_attribute",
        {"name": "t", "main": [{"evaluate": {"x": "$ _.__class__"}}]},
        "main[0].evaluate.x",
        "'__class__'",
    ),
    case(
        "dunder_builtin",
        {"name": "t", "main": [{"evaluate": {"x": "$ __import__('os')"}}]},
        "main[0].evaluate.x",
        "__import__",
    ),
    case(
        "lambda_unsupported",
        {"name": "t", "main": [{"evaluate": {"x": "$ (lambda: 1)()"}}]},
        "main[0].evaluate.x",
        "Lambda is not supported",
    ),
    case(
        "expression_too_long",
        {"name": "t", "main": [{"evaluate": {"x": "$ " + "1+" * 6000 + "1"}}]},
        "main[0].evaluate.x",
        "limit",
    ),
    case("bad_if_expression", {"name": "t", "main": [{"if": "$ 1 +", "then": OK}]}, "main[0].if", "syntax"),
    case(
        "nested_then_error",
        {"name": "t", "main": [{"if": "$ True", "then": [{"evaluate": {"x": "$ nope"}}]}]},
        "main[0].then[0].evaluate.x",
        "unknown name 'nope'",
    ),
    case(
        "switch_case_unknown_name",
        {"name": "t", "main": [{"switch": [{"case": "$ nope", "then": OK}]}]},
        "main[0].switch[0].case",
        "nope",
    ),
    case("empty_switch", {"name": "t", "main": [{"switch": []}]}, "main[0].switch"),
    case("foreach_without_do", {"name": "t", "main": [{"foreach": {"in": "$ [1]"}}]}, "main[0].foreach.do"),
    case(
        "parallel_branch_error",
        {"name": "t", "main": [{"parallel": [[{"evaluate": {"x": "$ nope"}}]]}]},
        "main[0].parallel[0][0].evaluate.x",
        "nope",
    ),
    case(
        "reduce_unknown_name",
        {
            "name": "t",
            "main": [{"over": "$ [1]", "map": {"evaluate": {"x": "$ _"}}, "reduce": "$ results + z"}],
        },
        "main[0].reduce",
        "unknown name 'z'",
    ),
    case(
        "negative_parallelism",
        {"name": "t", "main": [{"over": "$ [1]", "map": {"evaluate": {"x": "$ _"}}, "parallelism": -1}]},
        "main[0].parallelism",
        "at least 1",
    ),
    case("unknown_tool", {"name": "t", "main": [{"tool": "nope"}]}, "main[0].tool", "unknown tool 'nope'"),
    case(
        "unknown_tool_seed_form",
        {"name": "t", "main": [{"tool": {"name": "nope", "arguments": {}}}]},
        "main[0].tool",
        "unknown tool 'nope'",
    ),
    case(
        "unknown_workflow_in_yield",
        {"name": "t", "main": [{"workflow": "nope"}]},
        "main[0].workflow",
        "unknown workflow 'nope'",
    ),
    case(
        "bad_workflow_name_in_yield", {"name": "t", "main": [{"workflow": "bad name!"}]}, "main[0].workflow"
    ),
    case("bad_sleep_shape", {"name": "t", "main": [{"sleep": [1, 2]}]}, "main[0].sleep", "sleep takes"),
    case("bad_sleep_boolean", {"name": "t", "main": [{"sleep": True}]}, "main[0].sleep", "sleep takes"),
    case("bad_sleep_unit", {"name": "t", "main": [{"sleep": {"weeks": 1}}]}, "main[0].sleep.weeks"),
    case(
        "wait_for_input_not_a_mapping",
        {"name": "t", "main": [{"wait_for_input": "x"}]},
        "main[0].wait_for_input",
    ),
    case(
        "duplicate_labels",
        {
            "name": "t",
            "main": [{"label": "a", "evaluate": {"x": "1"}}, {"label": "a", "evaluate": {"y": "2"}}],
        },
        "main[1].label",
        "already used at main[0]",
    ),
    case("empty_label", {"name": "t", "main": [{"label": "", "evaluate": {"x": "$ 1"}}]}, "main[0].label"),
    case(
        "bad_input_schema",
        {"name": "t", "input_schema": {"type": "object", "properties": {"a": {"type": "nope"}}}, "main": OK},
        "input_schema.properties.a.type",
        "'nope'",
    ),
    case(
        "bad_input_schema_regex",
        {"name": "t", "input_schema": {"type": "string", "pattern": "("}, "main": OK},
        "input_schema.pattern",
        "regex",
    ),
    case("input_schema_not_a_mapping", {"name": "t", "input_schema": "x", "main": OK}, "input_schema"),
    case(
        "jinja_syntax_error_in_prompt",
        {"name": "t", "main": [{"prompt": "Hello {{ inputs[0].name"}]},
        "main[0].prompt",
        "template syntax error",
    ),
    case(
        "jinja_unknown_name_in_message",
        {"name": "t", "main": [{"prompt": [{"role": "user", "content": "{{ z }}"}]}]},
        "main[0].prompt[0].content",
        "unknown name 'z'",
    ),
    case(
        "bad_message_role",
        {"name": "t", "main": [{"prompt": [{"role": "robot", "content": "hi"}]}]},
        "main[0].prompt[0].role",
    ),
    case(
        "api_call_tool_without_url",
        {
            "name": "t",
            "tools": [{"name": "c", "type": "api_call", "api_call": {"method": "GET"}}],
            "main": [{"tool": "c"}],
        },
        "tools[0].api_call.url",
        "missing",
    ),
    case(
        "subworkflow_error_path",
        {"name": "t", "main": [{"workflow": "helper"}], "helper": [{"evaluate": {"x": "$ 1 +"}}]},
        "helper[0].evaluate.x",
        "syntax error",
    ),
    case("subworkflow_not_a_list", {"name": "t", "main": OK, "helper": "x"}, "helper", "list of steps"),
    case(
        "misspelled_top_level_field",
        {"name": "t", "descripton": "typo", "main": OK},
        "descripton",
        "did you mean `description`?",
    ),
    case("inherit_tools_not_boolean", {"name": "t", "inherit_tools": "maybe", "main": OK}, "inherit_tools"),
    case(
        "search_bad_mode",
        {"name": "t", "main": [{"search": {"query": "$ 'x'", "mode": "magic"}}]},
        "main[0].search.mode",
    ),
    case(
        "return_unknown_name_path",
        {"name": "t", "main": [{"return": {"x": "$ nope", "y": "$ 1"}}]},
        "main[0].return.x",
        "nope",
    ),
    case(
        "duplicate_task_tool_names",
        {
            "name": "t",
            "tools": [{"name": "dup", "type": "function"}, {"name": "dup", "type": "function"}],
            "main": [{"tool": "dup"}],
        },
        "tools[1].name",
        "dup",
    ),
]


@pytest.mark.parametrize(("document", "path", "contains"), BAD_TASKS)
async def test_bad_task_is_rejected_with_its_path(api, agent_id, document, path, contains):
    response = await api.post(f"/agents/{agent_id}/tasks", json=document)
    await expect_error(response, 422, path, contains)
    listed = await api.get(f"/agents/{agent_id}/tasks")
    assert listed.status_code == 200 and listed.json()["items"] == [], "a rejected task must not be saved"


async def test_every_problem_is_listed(api, agent_id):
    document = {
        "name": "t",
        "main": [{"evaluate": {"x": "$ nope"}}, {"tool": "ghost"}],
        "helper": [{"evaluate": {"y": "$ 1 +"}}],
    }
    body = await expect_error(await api.post(f"/agents/{agent_id}/tasks", json=document), 422)
    paths = {p["loc"] for p in body["error"]["details"]}
    assert {"main[0].evaluate.x", "main[1].tool", "helper[0].evaluate.y"} <= paths, body


TYPOS = """\
name: typos
tools:
  - name: lookup
    type: function
main:
  - evalute:
      x: $ 1
  - tool: lookup
    argumets:
      q: $ _.x
  - evaluate:
      y: $ inptus[0]
"""


async def test_a_typo_an_unknown_step_key_and_a_bad_expression_come_back_in_one_answer(api, agent_id):
    """Structural problems (a step of no kind) and semantic ones (an unknown name) in one 422, in path order,
    each naming what was meant."""
    body = await expect_error(await post_yaml(api, agent_id, TYPOS), 422, "main[0]")
    assert [{"loc": p["loc"], "msg": p["msg"]} for p in body["error"]["details"]] == [
        {"loc": "main[0]", "msg": "unknown step key `evalute`: did you mean `evaluate`?"},
        {
            "loc": "main[1].argumets",
            "msg": "unknown key `argumets` in a `tool` step: did you mean `arguments`?",
        },
        {"loc": "main[2].evaluate.y", "msg": "unknown name 'inptus': did you mean `inputs`?"},
    ]
    assert all(p["loc"] in body["error"]["message"] for p in body["error"]["details"]), body
    assert (await api.get(f"/agents/{agent_id}/tasks")).json()["items"] == []


async def test_agent_tools_count_only_when_inherited(api, agent_id):
    created = await api.post(f"/agents/{agent_id}/tools", json={"name": "lookup", "type": "function"})
    assert created.status_code == 201, created.text
    document = {"name": "t", "inherit_tools": False, "main": [{"tool": "lookup"}]}
    await expect_error(
        await api.post(f"/agents/{agent_id}/tasks", json=document), 422, "main[0].tool", ("lookup",)
    )
    document["inherit_tools"] = True
    assert (await api.post(f"/agents/{agent_id}/tasks", json=document)).status_code == 201


async def test_template_dunder_access_never_escapes_the_sandbox(api, agent_id):
    document = {"name": "t", "main": [{"log": "{{ _.__class__.__mro__[1].__subclasses__() }}"}]}
    response = await api.post(f"/agents/{agent_id}/tasks", json=document)
    if response.status_code == 201:  # accepted at creation: the sandbox must stop it at run time
        execution = await start(api, response.json()["id"], {"a": 1})
        done = await wait_for_status(api, execution["id"])
        assert done["status"] == "failed", done
        assert "subclasses" not in json.dumps(done["output"])
        await assert_nothing_stuck(api, response.json()["id"])
    else:
        await expect_error(response, 422, "main[0].log")


# Bad documents ---------------------------------------------------------------------------------------------------


async def post_yaml(api: httpx.AsyncClient, agent_id: str, text: str | bytes) -> httpx.Response:
    return await api.post(
        f"/agents/{agent_id}/tasks", content=text, headers={"Content-Type": "application/yaml"}
    )


async def test_yaml_syntax_error(api, agent_id):
    body = await expect_error(
        await post_yaml(api, agent_id, "name: t\nmain: [\n"), 400, contains=("cannot parse",)
    )
    assert "line" in body["error"]["message"]


async def test_yaml_that_is_not_a_mapping(api, agent_id):
    await expect_error(await post_yaml(api, agent_id, "- evaluate: {x: '$ 1'}\n"), 422, contains=("mapping",))
    await expect_error(await post_yaml(api, agent_id, "just a string\n"), 422, contains=("mapping",))


async def test_yaml_alias_bomb_is_refused(api, agent_id):
    lines = ["a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i in range(1, 9):
        prev, name = chr(96 + i), chr(97 + i)
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    await expect_error(await post_yaml(api, agent_id, "\n".join(lines) + "\n"), 400, contains=("too large",))


async def test_yaml_non_string_key(api, agent_id):
    text = "name: t\nmain:\n  - evaluate: {x: '$ 1'}\nmetadata: {1: one}\n"
    await expect_error(await post_yaml(api, agent_id, text), 422, "metadata[1]")


async def test_task_body_too_large(api, agent_id):
    text = "name: t\nmain:\n  - log: '" + "x" * 1_100_000 + "'\n"
    await expect_error(await post_yaml(api, agent_id, text), 413, contains=("limit",))


async def test_task_bad_json(api, agent_id):
    response = await api.post(
        f"/agents/{agent_id}/tasks",
        content=b'{"name": "t", "main": [',
        headers={"Content-Type": "application/json"},
    )
    await expect_error(response, 400, contains=("cannot parse",))


async def test_task_for_unknown_or_malformed_agent(api):
    await expect_error(await api.post(f"/agents/{uuid.uuid4()}/tasks", json={"name": "t", "main": OK}), 404)
    await expect_error(await api.post("/agents/not-an-id/tasks", json={"name": "t", "main": OK}), 404)


# Bad agents, users and tools (unknown body keys are ignored, as on Julep: tests/test_julep_api.py) --------------


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"about": "no name"}, "body.name", id="missing_name"),
        pytest.param({"name": ""}, "body.name", id="empty_name"),
        pytest.param({"name": "x" * 256}, "body.name", id="name_too_long"),
        pytest.param({"name": "x", "instructions": 5}, "body.instructions", id="instructions_wrong_type"),
        pytest.param({"name": "x", "metadata": [1]}, "body.metadata", id="metadata_not_a_mapping"),
        pytest.param([{"name": "x"}], "body", id="body_not_an_object"),
    ],
)
async def test_bad_agent_create(api, body, path):
    await expect_error(await api.post("/agents", json=body), 422, path)
    assert (await api.get("/agents")).json()["items"] == []


async def test_agent_create_bad_json(api):
    response = await api.post(
        "/agents", content=b'{"name": "x"', headers={"Content-Type": "application/json"}
    )
    await expect_client_error(response)
    await expect_error(response, response.status_code, contains=("JSON",))


async def test_bad_user_create(api):
    await expect_error(await api.post("/users", json={"metadata": "x"}), 422, "body.metadata")


async def test_agent_patch_with_null_name(api, agent_id):
    response = await api.patch(f"/agents/{agent_id}", json={"name": None})
    await settle(response)
    assert response.status_code < 500, response.text
    assert (await api.get(f"/agents/{agent_id}")).json()["name"] == "tester"


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param(
            {"name": "c", "type": "api_call", "api_call": {"method": "GET"}}, "api_call.url", id="no_url"
        ),
        pytest.param(
            {"name": "c", "type": "api_call", "api_call": {"url": "https://x", "method": "FETCH"}},
            "api_call.method",
            id="bad_method",
        ),
        pytest.param({"name": "c", "type": "magic"}, "type", id="bad_type"),
        pytest.param({"name": "c d", "type": "function"}, "name", id="bad_name"),
        pytest.param({"type": "function"}, "name", id="missing_name"),
        pytest.param(
            {"name": "c", "type": "api_call"},
            "api_call",
            id="api_call_missing",
        ),
    ],
)
async def test_bad_tool_definition(api, agent_id, body, path):
    await expect_error(await api.post(f"/agents/{agent_id}/tools", json=body), 422, path)
    assert (await api.get(f"/agents/{agent_id}/tools")).json()["items"] == []


async def test_tool_patch_to_invalid_is_refused_and_changes_nothing(api, agent_id):
    created = await api.post(
        f"/agents/{agent_id}/tools", json={"name": "f", "type": "function", "description": "original"}
    )
    assert created.status_code == 201, created.text
    tool_id = created.json()["id"]
    await expect_error(
        await api.patch(f"/agents/{agent_id}/tools/{tool_id}", json={"name": "bad name"}), 422, "name"
    )
    await expect_error(
        await api.put(f"/agents/{agent_id}/tools/{tool_id}", json={"name": "f", "type": "nope"}), 422, "type"
    )
    [tool] = (await api.get(f"/agents/{agent_id}/tools")).json()["items"]
    assert (tool["name"], tool["description"]) == ("f", "original")


async def test_duplicate_tool_name_conflicts(api, agent_id):
    body = {"name": "f", "type": "function"}
    assert (await api.post(f"/agents/{agent_id}/tools", json=body)).status_code == 201
    response = await api.post(f"/agents/{agent_id}/tools", json=body)
    await expect_error(response, 409, contains=("'f'",))
    assert response.headers.get("x-should-retry") == "false"


# Text the database cannot hold -----------------------------------------------------------------------------------


async def test_nul_in_agent_name(api):
    response = await api.post("/agents", json={"name": "a\u0000b"})
    await expect_client_error(response)


async def test_nul_in_user_name(api):
    response = await api.post("/users", json={"name": "\u0000"})
    await expect_client_error(response)


async def test_nul_in_yaml_task(api, agent_id):
    response = await post_yaml(api, agent_id, 'name: "t\\0"\nmain:\n  - evaluate: {x: "$ 1"}\n')
    await expect_client_error(response)


async def test_nul_in_execution_input(api, agent_id):
    task = await create_task(api, agent_id, {"name": "t", "main": OK})
    response = await api.post(f"/tasks/{task['id']}/executions", json={"input": {"v": "a\u0000"}})
    await assert_nothing_stuck(api, task["id"])
    await expect_client_error(response)


async def test_nan_in_json_body(api):
    response = await api.post(
        "/agents",
        content=b'{"name": "x", "metadata": {"v": NaN}}',
        headers={"Content-Type": "application/json"},
    )
    await expect_client_error(response)


# Any text Postgres cannot store, anywhere in a request -------------------------------------------------------------
#
# Each value goes in as a client sends it: a JSON escape (\u0000, \ud800), or the bytes of an encoded
# surrogate (which Python's json also reads). Each is a 422 naming the field, and nothing is stored.

ODD_TEXT = [
    pytest.param("a\u0000b", False, "NUL character", id="nul"),
    pytest.param("a\ud800b", False, "lone surrogate", id="high_surrogate"),
    pytest.param("\udfff", False, "lone surrogate", id="low_surrogate"),
    pytest.param("\udc00\ud800", False, "lone surrogate", id="reversed_pair"),
    pytest.param("a\udbff", True, "lone surrogate", id="surrogate_as_bytes"),
]


def json_bytes(body: Any, raw: bool = False) -> bytes:
    """JSON as a client might send it: ASCII with escapes, or (raw) UTF-8 with any surrogates as bytes."""
    return json.dumps(body, ensure_ascii=not raw).encode("utf-8", "surrogatepass")


def odd(method: str, route: str, body: Any, path: Any, listing: str | None) -> Any:
    """`body(text, ids)` puts `text` somewhere; `path` (or `path(text)`) is where the 422 must point; the
    `listing` route must read the same before and after."""
    return pytest.param(
        method, route, body, path, listing, id=f"{method} {route} {path if isinstance(path, str) else 'key'}"
    )


ODD_BODIES = [
    odd("POST", "/agents", lambda t, ids: {"name": t}, "body.name", "/agents"),
    odd(
        "POST",
        "/agents",
        lambda t, ids: {"name": "a", "metadata": {"k": [0, t]}},
        "body.metadata.k[1]",
        "/agents",
    ),
    odd(
        "POST",
        "/agents",
        lambda t, ids: {"name": "a", "metadata": {t: 1}},
        lambda t: f"body.metadata[{t!r}]",
        "/agents",
    ),
    odd(
        "PUT",
        "/agents/{agent}",
        lambda t, ids: {"name": "a", "instructions": ["ok", t]},
        "body.instructions[1]",
        "/agents/{agent}",
    ),
    odd("PATCH", "/agents/{agent}", lambda t, ids: {"about": t}, "body.about", "/agents/{agent}"),
    odd("POST", "/users", lambda t, ids: {"name": "u", "about": t}, "body.about", "/users"),
    odd(
        "POST",
        "/agents/{agent}/tools",
        lambda t, ids: {"name": "f", "type": "function", "description": t},
        "body.description",
        "/agents/{agent}/tools",
    ),
    odd(
        "POST",
        "/tasks/{task}/executions",
        lambda t, ids: {"input": {"v": t}},
        "body.input.v",
        "/tasks/{task}/executions",
    ),
    odd(
        "POST",
        "/tasks/{task}/executions",
        lambda t, ids: {"input": {}, "metadata": {"m": t}},
        "body.metadata.m",
        "/tasks/{task}/executions",
    ),
    odd(
        "POST",
        "/sessions",
        lambda t, ids: {"agent": ids["agent"], "situation": t},
        "body.situation",
        "/sessions",
    ),
    odd(
        "PATCH",
        "/sessions/{session}",
        lambda t, ids: {"metadata": {"k": t}},
        "body.metadata.k",
        "/sessions/{session}",
    ),
    odd(
        "POST",
        "/sessions/{session}/render",
        lambda t, ids: {"messages": [{"role": "user", "content": t}]},
        "body.messages[0].content",
        "/sessions/{session}/history",
    ),
    odd(
        "POST",
        "/agents/{agent}/docs",
        lambda t, ids: {"title": "d", "content": t},
        "body.content",
        "/agents/{agent}/docs",
    ),
    odd("POST", "/agents/{agent}/search", lambda t, ids: {"text": t}, "body.text", None),
    odd("POST", "/secrets", lambda t, ids: {"name": "key", "value": t}, "body.value", "/secrets"),
    odd(
        "POST",
        "/agents/{agent}/tasks",
        lambda t, ids: {"name": "t", "main": [{"evaluate": {"x": f"$ '{t}'"}}]},
        "main[0].evaluate.x",
        "/agents/{agent}/tasks",
    ),
    odd(
        "POST",
        "/agents/{agent}/tasks",
        lambda t, ids: {"name": "t", "main": [{"label": t, "log": "{{ _ }}"}]},
        "main[0].label",
        "/agents/{agent}/tasks",
    ),
    odd(
        "POST",
        "/agents/{agent}/tasks/{task}",
        lambda t, ids: {"name": "t", "main": OK, "metadata": {t: 1}},
        lambda t: f"metadata[{t!r}]",
        "/tasks/{task}",
    ),
]


@pytest.fixture
async def owned(api, agent_id) -> dict[str, str]:
    """One of each resource the routes above write to."""
    task = await create_task(api, agent_id, {"name": "t", "main": OK})
    session = (await api.post("/sessions", json={"agent": agent_id})).json()
    return {"agent": agent_id, "task": task["id"], "session": session["id"]}


@pytest.mark.parametrize(("text", "raw", "problem"), ODD_TEXT)
@pytest.mark.parametrize(("method", "route", "body", "path", "listing"), ODD_BODIES)
async def test_unstorable_text_in_a_json_body(
    api, owned, method, route, body, path, listing, text, raw, problem
):
    before = (await api.get(listing.format(**owned))).json() if listing else None
    response = await api.request(
        method, route.format(**owned), content=json_bytes(body(text, owned), raw), headers=JSON
    )
    await expect_error(response, 422, path(text) if callable(path) else path, (problem,))
    if listing:
        assert (await api.get(listing.format(**owned))).json() == before, "nothing may be stored"
    await assert_nothing_stuck(api, owned["task"])


@pytest.mark.parametrize(("text", "raw", "problem"), ODD_TEXT)
async def test_unstorable_text_in_a_resume_input(api, agent_id, text, raw, problem):
    task = await create_task(api, agent_id, WAIT_TASK)
    execution = await start(api, task["id"])
    await wait_for_status(api, execution["id"], {"awaiting_input"})
    body = json_bytes({"status": "running", "input": {"n": [text]}}, raw)
    response = await api.put(f"/executions/{execution['id']}", content=body, headers=JSON)
    await expect_error(response, 422, "body.input.n[0]", (problem,))
    assert (await api.get(f"/executions/{execution['id']}")).json()["status"] == "awaiting_input"
    await api.put(f"/executions/{execution['id']}", json={"status": "cancelled"})
    assert (await wait_for_status(api, execution["id"]))["status"] == "cancelled"


@pytest.mark.parametrize(
    ("document", "path", "problem"),
    [
        pytest.param('name: "t\\0"\nmain: [{log: x}]\n', "name", "NUL character", id="nul_in_name"),
        pytest.param(
            "name: t\nmain: [{evaluate: {x: \"$ 'a\\0'\"}}]\n",
            "main[0].evaluate.x",
            "NUL",
            id="nul_in_expression",
        ),
        pytest.param(
            'name: t\nmain: [{log: "{{ _ }}\\0"}]\n', "main[0].log", "NUL character", id="nul_in_template"
        ),
        pytest.param(
            'name: t\nmain: [{log: x}]\nmetadata: {"k\\0": 1}\n', "metadata['k\\x00']", "NUL", id="nul_in_key"
        ),
    ],
)
async def test_unstorable_text_in_a_yaml_task(api, agent_id, document, path, problem):
    await expect_error(await post_yaml(api, agent_id, document), 422, path, (problem,))
    assert (await api.get(f"/agents/{agent_id}/tasks")).json()["items"] == []


@pytest.mark.parametrize(
    ("document", "where"),
    [
        pytest.param('name: "t\\ud800"\nmain: [{log: x}]\n', "line 1, column 7", id="surrogate_escape"),
        pytest.param(b'name: "t\xed\xa0\x80"\nmain: [{log: x}]\n', "position 8", id="surrogate_bytes"),
    ],
)
async def test_a_surrogate_in_a_yaml_task_is_a_syntax_error_saying_where(api, agent_id, document, where):
    """YAML itself has no lone surrogates: the parser refuses them, saying where."""
    response = await post_yaml(api, agent_id, document)
    await expect_error(response, 400, contains=("invalid Unicode character", where))


@pytest.mark.parametrize(("text", "raw", "problem"), [p for p in ODD_TEXT if not p.values[1]])
@pytest.mark.parametrize(
    "route",
    [
        "/agents",
        "/users",
        "/sessions",
        "/secrets",
        "/agents/{agent}/tools",
        "/agents/{agent}/docs",
        "/tasks/{task}/executions",
    ],
)
async def test_unstorable_text_in_a_metadata_filter(api, owned, route, text, raw, problem):
    url = route.format(**owned)
    as_json = {"metadata_filter": json.dumps({"a": text})}
    await expect_error(await api.get(url, params=as_json), 422, "query.metadata_filter.a", (problem,))


@pytest.mark.parametrize(
    ("query", "path"),
    [
        pytest.param("metadata_filter.a=%00", "query['metadata_filter.a']", id="dotted_filter_value"),
        pytest.param("metadata_filter.a%00=1", "query['metadata_filter.a\\x00']", id="dotted_filter_key"),
        pytest.param("direction=%00", "query.direction", id="direction"),
        pytest.param("limit=1%00", "query.limit", id="limit"),
    ],
)
async def test_nul_in_a_query_parameter(api, query, path):
    await expect_error(await api.get(f"/agents?{query}"), 422, path, ("NUL character",))


async def test_text_with_surrogate_pairs_is_stored_and_read_back(api):
    """Emoji sent as escaped surrogate pairs (Python's json.dumps, the julep SDK) are plain text."""
    body = {"name": "smile \U0001f600", "metadata": {"e\U0001f600": ["\U0001f680", "\u00e9"]}}
    response = await api.post("/agents", content=json_bytes(body), headers=JSON)
    assert response.status_code == 201, response.text
    agent = (await api.get(f"/agents/{response.json()['id']}")).json()
    assert (agent["name"], agent["metadata"]) == (body["name"], body["metadata"])


# Nesting past the limit: JSON and YAML bodies, query strings -------------------------------------------------------
#
# 100 levels parse (and used to go on to the database or the workflow); 1,500 is past what json.loads can
# parse (RecursionError, a 500); 100,000 is far past. Each is a 422 at the place the limit is crossed.


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_path(prefix: str, levels_used: int) -> str:
    """The path of the first list past the limit, under `prefix` (which takes `levels_used` levels)."""
    return prefix + "[0]" * (MAX_DEPTH - levels_used)


DEPTHS = [pytest.param(100, id="100"), pytest.param(1_500, id="1500"), pytest.param(100_000, id="100000")]


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize(
    ("method", "route", "body", "path"),
    [
        pytest.param(
            "POST", "/agents", '{"name": "a", "metadata": {"a": DEEP}}', ("body.metadata.a", 2), id="agent"
        ),
        pytest.param(
            "POST", "/tasks/{task}/executions", '{"input": {"a": DEEP}}', ("body.input.a", 2), id="execution"
        ),
        pytest.param(
            "POST",
            "/sessions",
            '{"agent": "{agent}", "recall_options": {"a": DEEP}}',
            ("body.recall_options.a", 2),
            id="session",
        ),
        pytest.param(
            "POST",
            "/agents/{agent}/tasks",
            '{"name": "t", "main": [{"log": "x"}], "metadata": {"a": DEEP}}',
            ("metadata.a", 2),
            id="json_task",
        ),
    ],
)
async def test_a_json_body_nested_too_deeply(api, owned, depth, method, route, body, path):
    content = body.replace("{agent}", owned["agent"]).replace("DEEP", nested(depth)).encode()
    response = await api.request(method, route.format(**owned), content=content, headers=JSON)
    await expect_error(response, 422, deep_path(*path), (f"more than {MAX_DEPTH} levels",))
    await assert_nothing_stuck(api, owned["task"])


@pytest.mark.parametrize("depth", DEPTHS)
async def test_a_yaml_task_nested_too_deeply(api, agent_id, depth):
    document = f"name: t\nmain: [{{log: x}}]\nmetadata: {{a: {nested(depth)}}}\n"
    response = await post_yaml(api, agent_id, document)
    await expect_error(response, 422, deep_path("metadata.a", 2), (f"more than {MAX_DEPTH} levels",))


def block_sequences(depth: int) -> str:
    return "\n    " + "- " * depth + "x"


def block_mappings(depth: int) -> str:
    return "".join("\n" + " " * (4 + level) + "k:" for level in range(depth)) + " 1"


def flow_mappings(depth: int) -> str:
    return "{k: " * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [pytest.param(100, id="100"), pytest.param(1_200, id="1200")])
@pytest.mark.parametrize(
    ("nest", "below"),
    [(block_sequences, "[0]"), (block_mappings, ".k"), (flow_mappings, ".k")],
    ids=["block_sequences", "block_mappings", "flow_mappings"],
)
async def test_a_yaml_task_nested_too_deeply_in_any_style(api, agent_id, depth, nest, below):
    """Past 1,000 levels libyaml stops on its own; the answer still names where our limit is crossed. (1,200
    levels: block mappings indent each one, 1,500 would pass the task size limit.)"""
    document = f"name: t\nmain: [{{log: x}}]\nmetadata:\n  a: {nest(depth)}\n"
    response = await post_yaml(api, agent_id, document)
    await expect_error(
        response, 422, "metadata.a" + below * (MAX_DEPTH - 2), (f"more than {MAX_DEPTH} levels",)
    )


@pytest.mark.parametrize("depth", DEPTHS[:2])
@pytest.mark.parametrize("route", ["/agents", "/users", "/tasks/{task}/executions", "/agents/{agent}/docs"])
async def test_a_metadata_filter_nested_too_deeply(api, owned, route, depth):
    url = route.format(**owned)
    as_json = {"metadata_filter": '{"a": ' + nested(depth) + "}"}
    await expect_error(await api.get(url, params=as_json), 422, deep_path("query.metadata_filter.a", 1))
    dotted = "metadata_filter." + ".".join(["a"] * depth) + "=1"
    await expect_error(await api.get(f"{url}?{dotted}"), 422, "query.metadata_filter" + ".a" * MAX_DEPTH)


async def test_nesting_within_the_limit_is_kept(api):
    metadata = json.loads('{"a": ' + nested(MAX_DEPTH - 2) + "}")  # the body and `metadata` are two levels
    response = await api.post("/agents", json={"name": "a", "metadata": metadata})
    assert response.status_code == 201, response.text
    assert response.json()["metadata"] == metadata


# Query parameters ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "path"),
    [
        pytest.param({"limit": 0}, "query.limit", id="limit_zero"),
        pytest.param({"limit": 1001}, "query.limit", id="limit_too_big"),
        pytest.param({"limit": "abc"}, "query.limit", id="limit_not_a_number"),
        pytest.param({"limit": "1.5"}, "query.limit", id="limit_fraction"),
        pytest.param({"offset": -1}, "query.offset", id="negative_offset"),
        pytest.param({"direction": "sideways"}, "query.direction", id="bad_direction"),
        pytest.param({"sort_by": "name"}, "query.sort_by", id="bad_sort_by"),
    ],
)
@pytest.mark.parametrize("route", ["/agents", "/users"])
async def test_bad_list_query(api, route, query, path):
    await expect_error(await api.get(route, params=query), 422, path)


async def test_bad_list_query_on_nested_lists(api, agent_id):
    task = await create_task(api, agent_id, {"name": "t", "main": OK})
    execution = await start(api, task["id"])
    for route in (
        f"/agents/{agent_id}/tasks",
        f"/agents/{agent_id}/tools",
        f"/tasks/{task['id']}/executions",
        f"/executions/{execution['id']}/transitions",
    ):
        await expect_error(await api.get(route, params={"direction": "up"}), 422, "query.direction")
        await expect_error(await api.get(route, params={"limit": -5}), 422, "query.limit")
    await wait_for_status(api, execution["id"])


async def test_metadata_filter_not_an_object(api):
    await expect_error(
        await api.get("/agents", params={"metadata_filter": "[1]"}), 422, contains=("metadata_filter",)
    )
    await expect_error(
        await api.get("/agents", params={"metadata_filter": "{not json"}), 422, contains=("metadata_filter",)
    )


async def test_huge_offset(api):
    response = await api.get("/agents", params={"offset": str(10**20)})
    await expect_error(response, 422, "query.offset")


async def test_conflicting_metadata_filter_keys(api):
    response = await api.get("/agents?metadata_filter.a=1&metadata_filter.a.b=2")
    await expect_error(response, 422, contains=("metadata_filter",))


# Ids -------------------------------------------------------------------------------------------------------------


def id_routes(agent: str, task: str, execution: str, tool: str) -> list[tuple[str, str, Any]]:
    return [
        ("GET", f"/agents/{agent}", None),
        ("PATCH", f"/agents/{agent}", {"about": "x"}),
        ("PUT", f"/agents/{agent}", {"name": "x"}),
        ("DELETE", f"/agents/{agent}", None),
        ("GET", f"/agents/{agent}/tools", None),
        ("POST", f"/agents/{agent}/tools", {"name": "f", "type": "function"}),
        ("GET", f"/agents/{agent}/tasks", None),
        ("GET", f"/users/{agent}", None),
        ("PATCH", f"/users/{agent}", {"about": "x"}),
        ("DELETE", f"/users/{agent}", None),
        ("GET", f"/tasks/{task}", None),
        ("GET", f"/tasks/{task}/executions", None),
        ("POST", f"/tasks/{task}/executions", {"input": {}}),
        ("GET", f"/executions/{execution}", None),
        ("PUT", f"/executions/{execution}", {"status": "cancelled"}),
        ("GET", f"/executions/{execution}/transitions", None),
        ("GET", f"/executions/{execution}/transitions/{tool}", None),
        ("GET", f"/executions/{execution}/status.stream", None),
        ("GET", f"/executions/{execution}/transitions.stream", None),
        ("GET", f"/executions/{execution}/timers", None),
        ("POST", f"/executions/{execution}/restart", {"from_transition": tool}),
        ("GET", f"/executions/{execution}/trace", None),
        ("PATCH", f"/agents/{agent}/tools/{tool}", {"description": "x"}),
        ("DELETE", f"/agents/{agent}/tools/{tool}", None),
    ]


@pytest.mark.parametrize(
    "make_id",
    [
        pytest.param(lambda: "not-a-uuid", id="malformed"),
        pytest.param(lambda: "1; DROP TABLE agents", id="injection"),
        pytest.param(lambda: str(uuid.uuid4()), id="unknown"),
    ],
)
async def test_missing_ids_are_404(api, make_id):
    for method, route, body in id_routes(make_id(), make_id(), make_id(), make_id()):
        response = await api.request(method, route, json=body)
        await expect_error(response, 404, contains=("not found",))


async def test_unknown_child_ids_under_a_real_parent_are_404(api, agent_id):
    task = await create_task(api, agent_id, {"name": "t", "main": OK})
    execution = await start(api, task["id"])
    await wait_for_status(api, execution["id"])
    for bad in ("nope", str(uuid.uuid4())):
        await expect_error(await api.get(f"/executions/{execution['id']}/transitions/{bad}"), 404)
        await expect_error(await api.patch(f"/agents/{agent_id}/tools/{bad}", json={"description": "x"}), 404)
        await expect_error(await api.delete(f"/agents/{agent_id}/tools/{bad}"), 404)


async def test_other_developers_resources_are_404(api, agent_id, stack, store):
    task = await create_task(
        api, agent_id, {"name": "t", "main": [{"wait_for_input": {"info": {"q": "$ 1"}}}]}
    )
    execution = await start(api, task["id"])
    await wait_for_status(api, execution["id"], {"awaiting_input"})
    tool = (await api.post(f"/agents/{agent_id}/tools", json={"name": "f", "type": "function"})).json()
    _, other_key = await store.create_developer("intruder")
    async with await fresh_client(stack, other_key) as other:
        for method, route, body in id_routes(agent_id, task["id"], execution["id"], tool["id"]):
            await expect_error(await other.request(method, route, json=body), 404, contains=("not found",))
        await expect_error(
            await other.put(f"/executions/{execution['id']}", json={"status": "running", "input": {}}), 404
        )
    # Nothing the intruder tried had an effect.
    assert (await api.get(f"/agents/{agent_id}")).json()["about"] is None
    assert (await api.get(f"/executions/{execution['id']}")).json()["status"] == "awaiting_input"
    await api.put(f"/executions/{execution['id']}", json={"status": "cancelled"})
    await wait_for_status(api, execution["id"])


async def test_create_or_update_with_another_developers_agent_id(api, agent_id, stack, store):
    _, other_key = await store.create_developer("intruder")
    async with await fresh_client(stack, other_key) as other:
        response = await other.post(f"/agents/{agent_id}", json={"name": "stolen"})
        await settle(response)
        # Ids are per developer: the intruder made its own agent, and learnt nothing of ours.
        assert response.status_code == 201, response.text  # create-or-update: 201, as on Julep
    assert (await api.get(f"/agents/{agent_id}")).json()["name"] == "tester"


async def test_create_or_update_with_another_developers_user_id(api, stack, store):
    user_id = (await api.post("/users", json={"name": "mine"})).json()["id"]
    _, other_key = await store.create_developer("intruder")
    async with await fresh_client(stack, other_key) as other:
        response = await other.post(f"/users/{user_id}", json={"name": "stolen"})
        await settle(response)
        assert response.status_code == 201, response.text  # create-or-update: 201, as on Julep
    assert (await api.get(f"/users/{user_id}")).json()["name"] == "mine"


async def test_create_or_update_with_another_developers_task_id(api, agent_id, stack, store):
    task = await create_task(api, agent_id, {"name": "t", "main": OK})
    _, other_key = await store.create_developer("intruder")
    async with await fresh_client(stack, other_key) as other:
        other_agent = (await other.post("/agents", json={"name": "o"})).json()["id"]
        response = await other.post(
            f"/agents/{other_agent}/tasks/{task['id']}", json={"name": "stolen", "main": OK}
        )
        await settle(response)
        assert response.status_code == 201, response.text  # create-or-update: 201, as on Julep
    assert (await api.get(f"/tasks/{task['id']}")).json()["name"] == "t"


# Executions ------------------------------------------------------------------------------------------------------

SCHEMA_TASK = {
    "name": "typed",
    "input_schema": {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
    },
    "main": [{"evaluate": {"hello": "$ _.name"}}],
}


@pytest.mark.parametrize(
    ("body", "path", "contains"),
    [
        pytest.param({"input": {}}, "input", ("'name' is a required property",), id="missing_required"),
        pytest.param({"input": {"name": 5}}, "input['name']", ("not of type 'string'",), id="wrong_type"),
        pytest.param(
            {"input": {"name": "x", "tags": ["a", 2]}}, "input['tags'][1]", ("not of type",), id="nested"
        ),
        pytest.param({"input": "just text"}, "input", ("not of type 'object'",), id="not_an_object"),
    ],
)
async def test_input_not_matching_input_schema(api, agent_id, body, path, contains):
    task = await create_task(api, agent_id, SCHEMA_TASK)
    response = await api.post(f"/tasks/{task['id']}/executions", json=body)
    await expect_error(response, 422, path, ("input_schema", *contains))
    assert await assert_nothing_stuck(api, task["id"]) == [], "a refused start must not create an execution"


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"input": {"name": "x"}, "metadata": [1]}, "body.metadata", id="metadata_not_a_mapping"),
        pytest.param([{"input": {}}], "body", id="body_not_an_object"),
    ],
)
async def test_bad_execution_body(api, agent_id, body, path):
    task = await create_task(api, agent_id, SCHEMA_TASK)
    await expect_error(await api.post(f"/tasks/{task['id']}/executions", json=body), 422, path)
    assert await assert_nothing_stuck(api, task["id"]) == []


async def test_oversized_execution_input(api, agent_id):
    task = await create_task(api, agent_id, {"name": "t", "main": OK})
    response = await api.post(f"/tasks/{task['id']}/executions", json={"input": {"blob": "x" * 34_000_000}})
    await assert_nothing_stuck(api, task["id"])
    await expect_client_error(response)


async def test_input_schema_with_unresolvable_ref(api, agent_id):
    document = {"name": "t", "input_schema": {"$ref": "#/definitions/nope"}, "main": OK}
    response = await api.post(f"/agents/{agent_id}/tasks", json=document)
    if response.status_code == 201:
        task_id = response.json()["id"]
        response = await api.post(f"/tasks/{task_id}/executions", json={"input": {}})
        await assert_nothing_stuck(api, task_id)
    await expect_error(response, 422, contains=("$ref",))


WAIT_TASK = {
    "name": "ask",
    "main": [{"wait_for_input": {"info": {"question": "$ 'number?'"}}}, {"evaluate": {"answer": "$ _.n"}}],
}
SLEEP_TASK = {"name": "nap", "main": [{"sleep": {"seconds": 300}}]}


async def test_resume_when_not_awaiting_input_is_409(api, agent_id):
    task = await create_task(api, agent_id, {"name": "t", "main": OK})
    done = await start(api, task["id"])
    await wait_for_status(api, done["id"])
    await expect_error(
        await api.put(f"/executions/{done['id']}", json={"status": "running", "input": {}}),
        409,
        contains=("succeeded", "awaiting_input"),
    )

    nap = await create_task(api, agent_id, SLEEP_TASK)
    sleeping = await start(api, nap["id"])
    await wait_for_status(api, sleeping["id"], {"running"})
    response = await api.put(f"/executions/{sleeping['id']}", json={"status": "running", "input": {"n": 1}})
    await expect_error(response, 409, contains=("running", "awaiting_input"))
    assert response.headers.get("x-should-retry") == "false"
    assert (await api.get(f"/executions/{sleeping['id']}")).json()["status"] == "running"
    await api.put(f"/executions/{sleeping['id']}", json={"status": "cancelled"})
    assert (await wait_for_status(api, sleeping["id"]))["status"] == "cancelled"
    await assert_nothing_stuck(api, task["id"])
    await assert_nothing_stuck(api, nap["id"])


async def test_cancel_of_a_finished_execution_is_409(api, agent_id):
    task = await create_task(api, agent_id, WAIT_TASK)
    execution = await start(api, task["id"])
    await wait_for_status(api, execution["id"], {"awaiting_input"})
    assert (
        await api.put(f"/executions/{execution['id']}", json={"status": "running", "input": {"n": 7}})
    ).status_code == 200
    done = await wait_for_status(api, execution["id"])
    assert done["status"] == "succeeded" and done["output"] == {"answer": 7}, done
    before = await transitions(api, execution["id"])

    await expect_error(
        await api.put(f"/executions/{execution['id']}", json={"status": "cancelled", "reason": "late"}),
        409,
        contains=("already ended", "succeeded"),
    )
    await expect_error(
        await api.put(f"/executions/{execution['id']}", json={"status": "running", "input": {"n": 8}}), 409
    )
    assert (await api.get(f"/executions/{execution['id']}")).json()["status"] == "succeeded"
    assert await transitions(api, execution["id"]) == before, "a refused change must not add transitions"
    await assert_nothing_stuck(api, task["id"])


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"status": "paused"}, "body.status", id="unknown_status"),
        pytest.param({"status": "succeeded"}, "body.status", id="server_owned_status"),
        pytest.param({"input": {"n": 1}}, "body.status", id="missing_status"),
        pytest.param({"status": "cancelled", "reason": ["x"]}, "body.reason", id="reason_not_text"),
    ],
)
async def test_bad_change_status_body(api, agent_id, body, path):
    task = await create_task(api, agent_id, WAIT_TASK)
    execution = await start(api, task["id"])
    await wait_for_status(api, execution["id"], {"awaiting_input"})
    await expect_error(await api.put(f"/executions/{execution['id']}", json=body), 422, path)
    assert (await api.get(f"/executions/{execution['id']}")).json()["status"] == "awaiting_input"
    await api.put(f"/executions/{execution['id']}", json={"status": "cancelled"})
    assert (await wait_for_status(api, execution["id"]))["status"] == "cancelled"
    await assert_nothing_stuck(api, task["id"])


# Auth and routing ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="missing"),
        pytest.param({"Authorization": "Bearer"}, id="bearer_without_key"),
        pytest.param({"Authorization": "Bearer not-a-key"}, id="invalid_bearer"),
        pytest.param({"Authorization": "Basic dXNlcjpwYXNz"}, id="basic_scheme"),
        pytest.param({"X-Auth-Key": "not-a-key"}, id="invalid_x_auth_key"),
    ],
)
async def test_missing_or_invalid_api_key_is_401(stack, api_key, headers):
    async with httpx.AsyncClient(base_url=stack.url, headers=headers, timeout=30) as client:
        for method, route in (
            ("GET", "/agents"),
            ("POST", "/agents"),
            ("GET", "/users"),
            ("GET", f"/executions/{uuid.uuid4()}"),
        ):
            response = await client.request(method, route, json={"name": "x"} if method == "POST" else None)
            await expect_error(response, 401, contains=("API key",))
    # The same routes work with the real key in either header, so the 401s above are about the key.
    async with httpx.AsyncClient(base_url=stack.url, headers={"X-Auth-Key": api_key}, timeout=30) as client:
        assert (await client.get("/agents")).status_code == 200


async def test_unknown_route_and_method(api):
    await expect_error(await api.get("/no-such-thing"), 404)
    await expect_error(await api.delete("/agents"), 405)


# Found by fuzzing (tests/test_fuzz.py) ----------------------------------------------------------------------


async def test_null_execution_input(api, agent_id):
    task = await create_task(api, agent_id, {"name": "t", "main": OK})
    await expect_error(
        await api.post(f"/tasks/{task['id']}/executions", json={"input": None}), 422, "body.input"
    )
    assert await assert_nothing_stuck(api, task["id"]) == []


@pytest.mark.parametrize("field", ["render_templates", "auto_run_tools", "forward_tool_calls"])
async def test_session_patch_with_null_flag(api, agent_id, field):
    session = (await api.post("/sessions", json={"agent": agent_id})).json()
    await expect_error(
        await api.patch(f"/sessions/{session['id']}", json={field: None}), 422, f"body.{field}"
    )
    assert (await api.get(f"/sessions/{session['id']}")).json() == session


BAD_MESSAGES = [
    pytest.param([{"role": "user"}], "body.messages[0]", id="no_content"),
    pytest.param([{"role": "tool", "content": "r"}], "body.messages[0]", id="tool_without_call_id"),
    pytest.param(
        [{"role": "user", "content": "hi", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}],
        "body.messages[0]",
        id="tool_calls_on_user_message",
    ),
    pytest.param(
        [{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}],
        "body.messages[0].tool_calls[0].id",
        id="tool_call_without_id",
    ),
    pytest.param(
        [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "[1]"}}]}],
        "body.messages[0].tool_calls[0].function.arguments",
        id="arguments_not_an_object",
    ),
    pytest.param(
        [{"role": "user", "content": [1]}], "body.messages[0].content[0]", id="content_part_not_an_object"
    ),
]


@pytest.mark.parametrize(("messages", "path"), BAD_MESSAGES)
@pytest.mark.parametrize("route", ["render", "chat"])
async def test_malformed_chat_message(api, agent_id, messages, path, route):
    """Checked before anything reaches a model (they used to go through as they were: the provider refused
    them, or translating them for Anthropic crashed)."""
    session = (await api.post("/sessions", json={"agent": agent_id})).json()
    response = await api.post(f"/sessions/{session['id']}/{route}", json={"messages": messages})
    await expect_error(response, 422, path)


async def test_chat_with_an_invalid_extra_tool(api, agent_id):
    session = (await api.post("/sessions", json={"agent": agent_id})).json()
    body = {
        "messages": [{"role": "user", "content": "x"}],
        "tools": [{"name": "bad name!", "type": "function"}],
    }
    await expect_error(
        await api.post(f"/sessions/{session['id']}/render", json=body), 422, "body.tools[0].name"
    )


async def test_transitions_stream_resumed_past_its_end_ends(api, agent_id):
    task = await create_task(api, agent_id, {"name": "t", "main": OK})
    execution = await start(api, task["id"])
    await wait_for_status(api, execution["id"])
    for token in ("999", str(2**40)):  # past the last transition; past what the seq column holds
        response = await api.get(
            f"/executions/{execution['id']}/transitions.stream", params={"next_page_token": token}, timeout=10
        )
        assert response.status_code == 200 and response.text == "", (token, response.text)


async def test_request_after_a_large_body_on_the_same_connection(api):
    """uvicorn can run the next request of a keep-alive connection in a copy of the previous request's
    context, tenant included (when it resumes reading after a large body): the API key lookup must not act
    for that tenant. Whether reading paused depends on timing, hence the rounds."""
    for _ in range(5):
        assert (await api.post("/agents", json={"name": "big", "about": "a" * 800_000})).status_code == 201
        response = await api.get("/agents", params={"limit": 1})
        assert response.status_code == 200, response.text
