"""Julep v1's REST contract in its finer points: unknown body keys are ignored, as Julep
ignores them, and named in a `Warning` header; a session's PUT without participants keeps them (the SDK's
`sessions.reset`); render answers the tools too. The raw-HTTP comparison with Julep's whole spec is
tests/test_julep_spec.py; the error shape, status codes and docs bulk delete are checked where their kinds
live (test_bad_input.py, test_tenancy.py, test_docs.py)."""

from __future__ import annotations

import json
import re

import httpx

from tests.helpers import create_task, wait_for_status
from tests.model_server import Reply


def _warnings(response: httpx.Response) -> list[str]:
    return response.headers.get_list("warning")


async def test_unknown_body_keys_are_ignored_and_named_in_a_warning_header(api):
    agent = await api.post("/agents", json={"name": "a", "nmae": "typo", "julep_only": {"x": 1}})
    assert agent.status_code == 201, agent.text
    assert "nmae" not in agent.json() and "julep_only" not in agent.json()
    said = _warnings(agent)
    assert any("unknown key `nmae` in AgentCreate ignored: did you mean `name`?" in w for w in said), said
    assert any("`julep_only`" in w for w in said) and all(w.startswith('299 mint "') for w in said), said

    user = await api.post("/users", json={"name": "u", "nickname": "x"})
    assert user.status_code == 201 and any("`nickname` in UserCreate" in w for w in _warnings(user)), (
        user.text
    )
    session = await api.post("/sessions", json={"agent": agent.json()["id"], "colour": "red"})
    assert session.status_code == 201 and any("`colour`" in w for w in _warnings(session)), session.text

    task = await create_task(api, agent.json()["id"], {"name": "t", "main": [{"evaluate": {"x": "$ 1"}}]})
    execution = await api.post(f"/tasks/{task['id']}/executions", json={"input": {}, "priority": 3})
    assert execution.status_code == 201 and any("`priority`" in w for w in _warnings(execution)), (
        execution.text
    )
    assert (await wait_for_status(api, execution.json()["id"]))["status"] == "succeeded"

    tool = {"name": "t", "type": "function", "function": {}, "bogus": 1}
    created = await api.post(f"/agents/{agent.json()['id']}/tools", json=tool)
    assert created.status_code == 201 and "bogus" not in created.json(), created.text
    assert {"path": "bogus", "message": "unknown key, ignored as Julep v1 ignored it"} in created.json()[
        "warnings"
    ]
    assert any("`bogus` in a tool" in w for w in _warnings(created)), created.headers

    # A body with only known keys says nothing.
    plain = await api.post("/agents", json={"name": "b"})
    assert plain.status_code == 201 and _warnings(plain) == []


async def test_many_unknown_keys_make_a_bounded_header(api):
    response = await api.post("/agents", json={"name": "a", **{f"k{i}": i for i in range(500)}})
    assert response.status_code == 201, response.text
    assert len(_warnings(response)) == 20
    long = await api.post("/agents", json={"name": "a", "k" * 1_000_000: 1})
    assert long.status_code == 201 and len(long.headers["warning"]) < 200, long.headers


async def test_a_key_cannot_write_a_header_of_its_own(api):
    # A key is the client's text: a line break in it must not end the Warning header and start another.
    response = await api.post("/agents", json={"name": "a", "x\r\nSet-Cookie: session=evil": 1, "é€": 2})
    assert response.status_code == 201, response.text
    assert "set-cookie" not in response.headers
    said = _warnings(response)
    assert any("x??Set-Cookie: session=evil" in w for w in said) and any("`é?`" in w for w in said), said


async def test_a_session_reset_without_participants_keeps_them(api):
    # What the julep SDK's sessions.reset(session_id, situation=...) sends: no agent, no user.
    agent = (await api.post("/agents", json={"name": "a"})).json()
    user = (await api.post("/users", json={"name": "u"})).json()
    session = (await api.post("/sessions", json={"agent": agent["id"], "user": user["id"]})).json()
    reset = await api.put(f"/sessions/{session['id']}", json={"situation": "again"})
    assert reset.status_code == 200, reset.text
    assert (reset.json()["agents"], reset.json()["users"]) == ([agent["id"]], [user["id"]])
    assert reset.json()["situation"] == "again"
    # Naming them still replaces them (Mint's PUT may).
    other = (await api.post("/agents", json={"name": "b"})).json()
    moved = await api.put(f"/sessions/{session['id']}", json={"agent": other["id"]})
    assert moved.status_code == 200 and moved.json()["agents"] == [other["id"]], moved.text
    assert moved.json()["users"] == [user["id"]]


async def test_render_answers_the_tools_the_model_would_be_offered(api):
    agent = (await api.post("/agents", json={"name": "a", "model": "gpt-4o-mini"})).json()
    tool = {"name": "lookup", "type": "function", "function": {"parameters": {"type": "object"}}}
    assert (await api.post(f"/agents/{agent['id']}/tools", json=tool)).status_code == 201
    session = (await api.post("/sessions", json={"agent": agent["id"]})).json()
    rendered = await api.post(
        f"/sessions/{session['id']}/render", json={"messages": [{"role": "user", "content": "hi"}]}
    )
    assert rendered.status_code == 200, rendered.text
    assert [t["function"]["name"] for t in rendered.json()["tools"]] == ["lookup"]
    assert rendered.json()["messages"][-1]["content"] == "hi"


async def test_empty_fields_answer_julep_s_values_not_null(api):
    agent = (await api.post("/agents", json={"name": "Support desk!"})).json()
    assert (agent["model"], agent["instructions"], agent["default_settings"]) == ("", [], {})
    assert "{{agent.name}}" in agent["default_system_template"]  # the template chats use when none is set
    assert re.fullmatch(r"support_desk_[0-9a-f]{4}", agent["canonical_name"]), agent["canonical_name"]
    # Kept as it is across updates that name none; a given one is kept as given.
    reset = (await api.put(f"/agents/{agent['id']}", json={"name": "x", "instructions": "be brief"})).json()
    assert reset["canonical_name"] == agent["canonical_name"] and reset["instructions"] == ["be brief"]
    named = (await api.post("/agents", json={"name": "7", "canonical_name": "desk"})).json()
    assert named["canonical_name"] == "desk"
    unnamed = (await api.post("/agents", json={"name": "7 days"})).json()
    assert re.fullmatch(r"agent_7_days_[0-9a-f]{4}", unnamed["canonical_name"]), unnamed["canonical_name"]
    user = (await api.post("/users", json={"name": "u"})).json()
    assert user["about"] == ""


async def test_a_tasks_steps_are_answered_typed_and_round_trip(api):
    agent = (await api.post("/agents", json={"name": "a"})).json()
    tool = {"name": "look", "type": "function", "function": {}}
    task = {
        "name": "t",
        "tools": [tool],
        "main": [
            {"if": "$ True", "then": {"evaluate": {"x": "$ 1"}}, "else": [{"tool": "look", "arguments": {}}]},
            {"foreach": {"in": "$ [1]", "do": {"workflow": "other", "arguments": {}}}},
            {"parallel": [{"evaluate": {"y": "$ 2"}}]},
        ],
        "other": [{"return": {"done": "$ True"}}],
    }
    created = await create_task(api, agent["id"], task)
    main = created["main"]
    assert [s["kind_"] for s in main] == ["if_else", "foreach", "parallel"]
    # (Saved with one step as a list of one.)
    assert main[0]["then"][0]["kind_"] == "evaluate" and main[0]["else"][0]["kind_"] == "tool_call"
    assert (
        main[1]["foreach"]["do"][0]["kind_"] == "yield" and main[2]["parallel"][0][0]["kind_"] == "evaluate"
    )
    assert created["other"][0]["kind_"] == "return"
    # What Julep answers, sent back, is the same task (its kind_ read, its read-only keys ignored).
    again = await api.post(f"/agents/{agent['id']}/tasks/{created['id']}", json=created)
    assert again.status_code == 201 and again.json()["main"] == main, again.text


async def test_a_tasks_warnings_are_in_its_header_and_in_its_body_only_when_asked(api):
    # Julep's task has no key for them: its extra keys are workflows, and `warnings` would read as one.
    agent = (await api.post("/agents", json={"name": "a"})).json()
    task = {"name": "t", "main": [{"evaluate": {"x": "hello"}}]}
    plain = await api.post(f"/agents/{agent['id']}/tasks", json=task)
    assert plain.status_code == 201 and "warnings" not in plain.json(), plain.text
    said = "main[0].evaluate.x: read as text, not Python (unknown name 'hello')"
    assert _warnings(plain) == [f'299 mint "{said}"']
    asked = await api.post(f"/agents/{agent['id']}/tasks", json=task, params={"warnings": "true"})
    assert asked.json()["warnings"] == [{"path": "main[0].evaluate.x", "message": said.split(": ", 1)[1]}]
    assert "warnings" not in (await api.get(f"/tasks/{plain.json()['id']}")).json()


async def test_chat_passes_julep_s_settings_to_the_provider_and_says_what_it_cannot_take(mapi, model_server):
    agent = (await mapi.post("/agents", json={"name": "a", "model": "gpt-4o-mini"})).json()
    tool = {"name": "lookup", "type": "function", "function": {"parameters": {"type": "object"}}}
    assert (await mapi.post(f"/agents/{agent['id']}/tools", json=tool)).status_code == 201
    session = (await mapi.post("/sessions", json={"agent": agent["id"]})).json()
    body = {
        "messages": [{"role": "user", "content": "hi"}],
        "tool_choice": "none",
        "logit_bias": {"50256": -100},
        "min_p": 0.1,
        "remember": True,
    }
    answer = await mapi.post(f"/sessions/{session['id']}/chat", json=body)
    assert answer.status_code == 201, answer.text
    sent = model_server.calls[-1].body
    assert (sent["tool_choice"], sent["logit_bias"]) == ("none", {"50256": -100}) and "min_p" not in sent
    said = _warnings(answer)
    assert any("`min_p` is not taken by the model's provider" in w for w in said), said
    assert any("`remember` is ignored" in w for w in said), said

    # Anthropic takes neither logit_bias nor min_p: both left out, both said.
    claude = (await mapi.post("/agents", json={"name": "c", "model": "claude-3-5-haiku-latest"})).json()
    session = (await mapi.post("/sessions", json={"agent": claude["id"]})).json()
    answer = await mapi.post(f"/sessions/{session['id']}/chat", json={**body, "remember": False})
    assert answer.status_code == 201, answer.text
    assert not {"logit_bias", "min_p"} & set(model_server.calls[-1].body)
    assert sum("is not taken" in w for w in _warnings(answer)) == 2


async def test_recall_tools_false_sends_the_history_without_its_tool_exchanges(mapi, model_server, script):
    agent = (await mapi.post("/agents", json={"name": "a", "model": "gpt-4o-mini"})).json()
    session = (await mapi.post("/sessions", json={"agent": agent["id"]})).json()
    script.reply = lambda call: Reply(tool_calls=[("lookup", {"q": "x"})])
    tool = {"name": "lookup", "type": "function", "function": {"parameters": {"type": "object"}}}
    asked = {"messages": [{"role": "user", "content": "look it up"}], "tools": [tool]}
    assert (await mapi.post(f"/sessions/{session['id']}/chat", json=asked)).status_code == 201
    script.reply = lambda call: "done"
    result = {"role": "tool", "tool_call_id": "call-0", "content": "found"}
    assert (
        await mapi.post(f"/sessions/{session['id']}/chat", json={"messages": [result]})
    ).status_code == 201
    for recall_tools, roles in (
        (True, ["user", "assistant", "tool", "assistant"]),
        (False, ["user", "assistant"]),
    ):
        body = {
            "messages": [{"role": "user", "content": "again"}],
            "recall_tools": recall_tools,
            "save": False,
        }
        assert (await mapi.post(f"/sessions/{session['id']}/chat", json=body)).status_code == 201
        history = [m["role"] for m in model_server.calls[-1].messages if m["role"] != "system"][:-1]
        assert history == roles, (recall_tools, model_server.calls[-1].messages)


async def test_anthropic_built_in_tools_go_to_claude_and_their_calls_back_to_the_client(
    mapi, model_server, script
):
    computer = {
        "name": "screen",
        "type": "computer_20241022",
        "computer_20241022": {"display_width_px": 1024, "display_height_px": 768, "display_number": 1},
    }
    editor = {"name": "edit", "type": "text_editor_20241022", "text_editor_20241022": {}}
    claude = (await mapi.post("/agents", json={"name": "c", "model": "claude-3-5-sonnet-latest"})).json()
    for tool in (computer, editor):
        created = await mapi.post(f"/agents/{claude['id']}/tools", json=tool)
        assert created.status_code == 201 and created.json()["type"] == tool["type"], created.text
    session = (await mapi.post("/sessions", json={"agent": claude["id"], "auto_run_tools": True})).json()
    script.reply = lambda call: Reply(tool_calls=[("computer", {"action": "screenshot"})])
    answer = await mapi.post(
        f"/sessions/{session['id']}/chat", json={"messages": [{"role": "user", "content": "look"}]}
    )
    assert answer.status_code == 201, answer.text
    sent = model_server.calls[-1]
    assert sent.headers["anthropic-beta"] == "computer-use-2024-10-22"
    offered = {t["name"]: t for t in sent.body["tools"]}
    assert offered["computer"] == {
        "type": "computer_20241022",
        "name": "computer",
        "display_width_px": 1024,
        "display_height_px": 768,
        "display_number": 1,
    }
    assert offered["str_replace_editor"] == {"type": "text_editor_20241022", "name": "str_replace_editor"}
    # The client runs it, whatever auto_run_tools says: the call comes back under the tool's own name.
    (call,) = answer.json()["choices"][0]["message"]["tool_calls"]
    assert (call["function"]["name"], json.loads(call["function"]["arguments"])) == (
        "screen",
        {"action": "screenshot"},
    )

    # Only Claude models take them: another provider's is a clear refusal, not a silent drop.
    gpt = (await mapi.post("/agents", json={"name": "g", "model": "gpt-4o-mini"})).json()
    assert (await mapi.post(f"/agents/{gpt['id']}/tools", json=computer)).status_code == 201
    session = (await mapi.post("/sessions", json={"agent": gpt["id"]})).json()
    refused = await mapi.post(
        f"/sessions/{session['id']}/chat", json={"messages": [{"role": "user", "content": "look"}]}
    )
    assert refused.status_code == 400 and "only a Claude model takes it" in refused.text, refused.text


async def test_a_computer_tool_needs_its_screen(api):
    agent = (await api.post("/agents", json={"name": "a"})).json()
    bare = await api.post(
        f"/agents/{agent['id']}/tools", json={"name": "screen", "type": "computer_20241022"}
    )
    assert bare.status_code == 422 and "display_width_px" in bare.text, bare.text
