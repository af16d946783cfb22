"""Pass by reference (workflows/references.py) through the HTTP API, on the real stack with the scripted
model: large tool results become variables the model reads a preview of, `<<var:name>>` in a tool call's
arguments reaches the tool as the full value, by-reference-only tools are offered once a variable fits, and a bad
reference is an error the model reads. The pure functions' cases are tests/unit/test_references.py."""

from __future__ import annotations

import json
from typing import Any

from tests.helpers import create_agent, create_task, run_task, start, transitions, wait_for_status
from tests.local_http import LocalServer, Request
from tests.model_server import Call, Reply

PAGE = " ".join(f"word{i}" for i in range(2000))  # about 17,000 characters: over the default threshold
BY_REFERENCE = {"pass_by_reference": True}


def _site(request: Request) -> tuple[int, dict[str, str], bytes]:
    """`GET /page` answers a long text; `POST /count` counts the words of the text it is sent."""
    if request.path == "/page":
        return 200, {"Content-Type": "text/plain"}, PAGE.encode()
    words = len(json.loads(request.body)["text"].split())
    return 200, {"Content-Type": "application/json"}, json.dumps({"words": words}).encode()


def _tools(url: str) -> list[dict[str, Any]]:
    """fetch_page (no arguments) and count_words, whose `page` (an api_call answer) is by reference only."""
    return [
        {
            "name": "fetch_page",
            "type": "api_call",
            "description": "the page",
            "api_call": {"url": url + "page"},
        },
        {
            "name": "count_words",
            "type": "api_call",
            "description": "count the words of a fetched page",
            "api_call": {
                "method": "POST",
                "url": url + "count",
                "json": {"text": "{{ arguments.page.content }}"},
                "params_schema": {
                    "type": "object",
                    "properties": {"page": {"type": "object", "x-by-reference": True}},
                    "required": ["page"],
                },
            },
        },
    ]


def _tool_results(call: Call) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in call.messages if m["role"] == "tool"]


class FetchThenCount:
    """A model that fetches the page, passes what it read as the page's reference (or `reference`, when
    given) to count_words, then answers with what it read last. Records what it was offered and read."""

    def __init__(self, reference: str | None = None):
        self.reference = reference
        self.offered: list[set[str]] = []
        self.calls: list[Call] = []

    def __call__(self, call: Call) -> Reply:
        self.calls.append(call)
        self.offered.append({t["name"] for t in call.tools})
        results = _tool_results(call)
        if not results:
            return Reply(tool_calls=[("fetch_page", {})])
        if len(results) == 1:
            reference = self.reference or results[0]["data"]["reference"]
            return Reply(tool_calls=[("count_words", {"page": reference})])
        return Reply(content=json.dumps(results[-1]))


def _prompt(**settings: Any) -> dict[str, Any]:
    return {
        "prompt": "How many words?",
        "tools": "all",
        "auto_run_tools": True,
        "unwrap": True,
        "settings": settings,
    }


async def test_a_large_result_is_a_variable_and_a_reference_to_it_reaches_the_tool_in_full(mapi, script):
    model = script.reply = FetchThenCount()
    with LocalServer(_site) as site:
        execution, rows = await run_task(
            mapi, {"name": "words", "tools": _tools(site.url), "main": [_prompt(**BY_REFERENCE)]}
        )
        counted = [json.loads(r.body) for r in site.requests if r.path == "/count"]
    assert execution["status"] == "succeeded", execution["error"]
    # The model read a preview naming the variable, not the page.
    (fetched,) = _tool_results(model.calls[1])
    preview = fetched["data"]
    assert preview["reference"] == "<<var:fetch_page_1>>" and preview["type"] == "object"
    assert PAGE not in model.calls[1].messages[-1]["content"]
    assert len(model.calls[1].messages[-1]["content"]) < 1000
    # count_words got the whole page through the reference.
    assert counted == [{"text": PAGE}]
    assert json.loads(execution["output"])["data"]["json"] == {"words": 2000}
    # The transition keeps the full result, and the variable the model was shown.
    fetch_row = next(r for r in rows if r["metadata"].get("tool") == "fetch_page")
    assert fetch_row["output"]["variable"] == "fetch_page_1"
    assert fetch_row["output"]["result"]["data"]["content"] == PAGE
    count_row = next(r for r in rows if r["metadata"].get("tool") == "count_words")
    assert json.loads(count_row["output"]["tool_call"]["arguments"]) == {"page": "<<var:fetch_page_1>>"}


async def test_a_by_reference_tool_is_offered_only_once_a_variable_fits_it(mapi, script, model_server):
    model = script.reply = FetchThenCount()
    with LocalServer(_site) as site:
        execution, _ = await run_task(
            mapi, {"name": "words", "tools": _tools(site.url), "main": [_prompt(**BY_REFERENCE)]}
        )
    assert execution["status"] == "succeeded", execution["error"]
    assert model.offered[0] == {"fetch_page"}  # no variable yet: count_words cannot be called
    assert model.offered[1] == {"fetch_page", "count_words"}
    page = next(t for t in model.calls[1].tools if t["name"] == "count_words")["parameters"]["properties"][
        "page"
    ]
    assert page["enum"] == ["<<var:fetch_page_1>>"]
    assert "x-by-reference" not in json.dumps(page)


async def test_without_the_setting_results_go_to_the_model_whole(mapi, script):
    seen: list[Call] = []

    def fetch_then_answer(call: Call) -> Reply:
        seen.append(call)
        return Reply(content="read it") if _tool_results(call) else Reply(tool_calls=[("fetch_page", {})])

    script.reply = fetch_then_answer
    with LocalServer(_site) as site:
        execution, _ = await run_task(mapi, {"name": "words", "tools": _tools(site.url), "main": [_prompt()]})
    assert execution["status"] == "succeeded", execution["error"]
    assert {t["name"] for t in seen[0].tools} == {"fetch_page", "count_words"}
    (fetched,) = _tool_results(seen[1])
    assert fetched["data"]["content"] == PAGE


async def test_an_unknown_reference_is_an_error_the_model_reads_and_the_run_goes_on(mapi, script):
    model = script.reply = FetchThenCount(reference="<<var:fetch_page_9>>")
    with LocalServer(_site) as site:
        execution, rows = await run_task(
            mapi, {"name": "words", "tools": _tools(site.url), "main": [_prompt(**BY_REFERENCE)]}
        )
        counted = [r for r in site.requests if r.path == "/count"]
    assert execution["status"] == "succeeded", execution["error"]
    assert counted == []  # the tool did not run
    error = json.loads(execution["output"])  # what the model read, as it answered it
    assert _tool_results(model.calls[2])[-1] == error
    assert error["status"] == "error" and error["error"]["code"] == "invalid_reference"
    assert error["error"]["message"] == (
        "argument 'page': there is no variable 'fetch_page_9'; variables: fetch_page_1 (object)"
    )
    count_row = next(r for r in rows if r["metadata"].get("tool") == "count_words")
    assert count_row["output"]["result"]["error"]["code"] == "invalid_reference"


PUBLISH = {
    "name": "publish",
    "type": "function",
    "function": {
        "parameters": {
            "type": "object",
            "properties": {"report": {"type": "string", "x-by-reference": True}, "title": {"type": "string"}},
            "required": ["report", "title"],
        }
    },
}


async def test_the_tasks_state_values_are_variables_a_function_tool_receives_in_full(mapi, script):
    offered: list[dict[str, Any]] = []

    def model(call: Call) -> Reply:
        offered.append({t["name"]: t["parameters"] for t in call.tools})
        results = _tool_results(call)
        if not results:
            return Reply(
                tool_calls=[("publish", {"report": "<<var:report>>", "title": "Report on <<var:n>> items"})]
            )
        return Reply(content=f"published: {results[0]['data']['ok']}")

    script.reply = model
    task = {
        "name": "publish",
        "tools": [PUBLISH],
        "main": [
            {"set": {"report": "$ 'all quiet. ' * 300", "n": 3}},
            _prompt(**BY_REFERENCE),
        ],
    }
    created = await create_task(mapi, (await create_agent(mapi))["id"], task)
    execution = await start(mapi, created["id"])
    await wait_for_status(mapi, execution["id"], {"awaiting_input"})
    wait = (await transitions(mapi, execution["id"]))[-1]
    # The client answering the function tool gets the values, not the names.
    assert wait["output"]["tool_call"]["arguments"] == {
        "report": "all quiet. " * 300,
        "title": "Report on 3 items",
    }
    assert offered[0]["publish"]["properties"]["report"]["enum"] == ["<<var:report>>"]  # the string one only
    answer = await mapi.put(
        f"/executions/{execution['id']}", json={"status": "running", "input": {"ok": True}}
    )
    assert answer.status_code == 200, answer.text
    done = await wait_for_status(mapi, execution["id"])
    assert done["status"] == "succeeded" and done["output"] == "published: True"


async def test_bad_reference_settings_are_refused_where_they_are_written(mapi):
    agent = await create_agent(mapi)
    task = {"name": "bad", "main": [_prompt(pass_by_reference="yes", reference_threshold=0)]}
    response = await mapi.post(f"/agents/{agent['id']}/tasks", json=task)
    assert response.status_code in (400, 422), response.text
    text = response.text
    assert "main[0].settings" in text and "pass_by_reference" in text and "reference_threshold" in text
    response = await mapi.post(
        "/sessions", json={"agent": agent["id"], "settings": {"pass_by_reference": "yes"}}
    )
    assert response.status_code == 422, response.text
    assert "pass_by_reference" in response.text


async def test_a_chat_session_that_passes_by_reference(mapi, script):
    model = script.reply = FetchThenCount()
    agent = await create_agent(mapi)
    with LocalServer(_site) as site:
        created = await mapi.post(
            "/sessions",
            json={
                "agent": agent["id"],
                "auto_run_tools": True,
                "settings": {"pass_by_reference": True, "reference_threshold": 1000},
            },
        )
        assert created.status_code == 201, created.text
        session = created.json()
        assert session["settings"] == {"pass_by_reference": True, "reference_threshold": 1000}
        answer = await mapi.post(
            f"/sessions/{session['id']}/chat",
            json={"messages": [{"role": "user", "content": "How many words?"}], "tools": _tools(site.url)},
        )
        counted = [json.loads(r.body) for r in site.requests if r.path == "/count"]
    assert answer.status_code == 201, answer.text
    assert model.offered[0] == {"fetch_page"} and model.offered[1] == {"fetch_page", "count_words"}
    assert counted == [{"text": PAGE}]
    assert json.loads(answer.json()["choices"][0]["message"]["content"])["data"]["json"] == {"words": 2000}
    # The history keeps what the model read: the preview, not the page.
    entries = (await mapi.get(f"/sessions/{session['id']}/history")).json()["entries"]
    tool_entries = [e for e in entries if e["role"] == "tool"]
    assert PAGE not in json.dumps(tool_entries) and "<<var:fetch_page_1>>" in json.dumps(tool_entries)


BIG_PAGE = "w" * 500_000  # the case: 200 references to it would be a 100 MB request


def _big_site(request: Request) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "text/plain"}, BIG_PAGE.encode()


def _page_tools(url: str) -> list[dict[str, Any]]:
    """fetch_big (no arguments) and post_pages, which takes a list of pages."""
    return [
        {
            "name": "fetch_big",
            "type": "api_call",
            "description": "a big page",
            "api_call": {"url": url + "big"},
        },
        {
            "name": "post_pages",
            "type": "api_call",
            "description": "post pages",
            "api_call": {
                "method": "POST",
                "url": url + "post",
                "json": {"pages": "{{ arguments.pages }}"},
                "params_schema": {"type": "object", "properties": {"pages": {"type": "array"}}},
            },
        },
    ]


def _fetch_then_post_many(call: Call) -> Reply:
    """Fetches the big page, then posts 200 references to it."""
    results = _tool_results(call)
    if not results:
        return Reply(tool_calls=[("fetch_big", {})])
    if len(results) == 1:
        return Reply(tool_calls=[("post_pages", {"pages": [results[0]["data"]["reference"]] * 200})])
    return Reply(content="posted")


async def test_a_step_whose_references_would_pass_the_value_limit_fails_before_the_call(mapi, script):
    script.reply = _fetch_then_post_many
    with LocalServer(_big_site) as site:
        execution, rows = await run_task(
            mapi, {"name": "posts", "tools": _page_tools(site.url), "main": [_prompt(**BY_REFERENCE)]}
        )
        posted = [r for r in site.requests if r.path == "/post"]
    assert execution["status"] == "failed"
    assert posted == []  # nothing was built or sent
    assert execution["error"].startswith(
        "LimitExceeded: main[0]: tool 'post_pages': argument 'pages': once "
    ), execution["error"]
    assert "over 1000000 elements" in execution["error"]
    assert rows[-1]["type"] == "error"


async def test_a_chat_whose_references_would_pass_the_value_limit_is_refused(mapi, script):
    script.reply = _fetch_then_post_many
    agent = await create_agent(mapi)
    with LocalServer(_big_site) as site:
        created = await mapi.post(
            "/sessions", json={"agent": agent["id"], "auto_run_tools": True, "settings": BY_REFERENCE}
        )
        assert created.status_code == 201, created.text
        answer = await mapi.post(
            f"/sessions/{created.json()['id']}/chat",
            json={"messages": [{"role": "user", "content": "Post them"}], "tools": _page_tools(site.url)},
        )
        posted = [r for r in site.requests if r.path == "/post"]
    assert answer.status_code == 413, answer.text
    assert posted == []
    assert "tool 'post_pages': LimitExceeded: argument 'pages': once " in answer.text
