"""Conformance: the official `julep` SDK (2.21.0, sync client) drives a real Mint stack unchanged.

The sync SDK blocks, so each test runs a plain function in a worker thread (`asyncio.to_thread`) while the
session event loop keeps serving the fixtures.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import yaml
from julep import AuthenticationError, ConflictError, Julep, NotFoundError, UnprocessableEntityError

TERMINAL = {"succeeded", "failed", "cancelled"}
STATUSES = {"queued", "starting", "running", "awaiting_input", "succeeded", "failed", "cancelled"}
TRANSITION_TYPES = {
    "init",
    "init_branch",
    "step",
    "wait",
    "resume",
    "finish",
    "finish_branch",
    "error",
    "cancelled",
}
TIMEOUT = 60.0

GREETER_YAML = """
name: greeter
description: Greets someone loudly, through a named sub-workflow.
input_schema:
  type: object
  required: [name]
  properties:
    name: {type: string}
main:
  - label: greet
    evaluate:
      greeting: $ f"Hello, {_.name}"
  - workflow: shout
    arguments:
      text: $ _.greeting
  - return:
      result: $ _.loud
      length: $ len(steps['greet'].output.greeting)
shout:
  - evaluate:
      loud: $ _.text.upper() + "!"
"""

ASK_YAML = """
name: ask
main:
  - evaluate:
      question: $ "What is your favourite number?"
  - wait_for_input:
      info:
        question: $ _.question
  - return:
      doubled: $ _.number * 2
"""

SLEEPY_YAML = """
name: sleepy
main:
  - evaluate:
      started: $ True
  - sleep:
      seconds: {seconds}
  - evaluate:
      done: $ steps[0].output.started and steps[1].input.started
"""


@pytest.fixture
def client(stack: Any, api_key: str) -> Iterator[Julep]:
    # max_retries=0: a failure shows at once instead of after the SDK's ~25 s of backoff. The default
    # retry behaviour is checked on its own in test_errors_are_final_for_the_sdk_default_retries.
    with Julep(api_key=api_key, base_url=stack.url, max_retries=0) as sdk:
        yield sdk


async def in_thread(fn: Callable[..., Any], *args: Any, timeout: float = 2 * TIMEOUT) -> Any:
    """Run a blocking SDK scenario off the event loop, bounded so a hung stream fails the test."""
    return await asyncio.wait_for(asyncio.to_thread(fn, *args), timeout)


# Sync helpers ------------------------------------------------------------------------------------------------


def make_agent(client: Julep, name: str = "sdk-agent") -> str:
    return client.agents.create(name=name, about="made by the SDK tests", model="gpt-4o-mini").id


def make_task(client: Julep, agent_id: str, text: str) -> Any:
    doc = yaml.safe_load(text)
    return client.tasks.create(agent_id, **doc)


def wait_status(client: Julep, execution_id: str, statuses: set[str] = TERMINAL) -> Any:
    deadline = time.monotonic() + TIMEOUT
    while True:
        execution = client.executions.get(execution_id)
        assert execution.status in STATUSES, execution
        if execution.status in statuses:
            return execution
        assert time.monotonic() < deadline, f"execution stayed {execution.status}: {execution}"
        time.sleep(0.05)


def all_transitions(client: Julep, execution_id: str) -> list[Any]:
    return list(client.executions.transitions.list(execution_id, direction="asc", limit=1000).items)


def check_transition_shape(row: Any, execution_id: str) -> None:
    assert row.execution_id == execution_id
    assert row.type in TRANSITION_TYPES
    assert row.id and row.created_at is not None
    assert row.current.workflow and isinstance(row.current.step, int) and row.current.scope_id


def parse_sse(text: str) -> list[dict[str, Any]]:
    """The `data:` payloads of an SSE body, one JSON document per event."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


# Health --------------------------------------------------------------------------------------------------------


def _healthz(url: str, key: str) -> None:
    with Julep(api_key=key, base_url=url) as sdk:
        assert sdk.healthz.check() == {"status": "ok"}
    # /healthz needs no key, while every resource route refuses a wrong one.
    with Julep(api_key="not-a-real-key", base_url=url, max_retries=0) as stranger:
        assert stranger.healthz.check() == {"status": "ok"}
        with pytest.raises(AuthenticationError) as caught:
            stranger.agents.list()
        assert caught.value.status_code == 401
        assert "API key" in caught.value.body["error"]["message"]


async def test_healthz(stack, api_key):
    await in_thread(_healthz, stack.url, api_key)


# Agents ------------------------------------------------------------------------------------------------------


def _agents_crud(client: Julep) -> None:
    agent = client.agents.create(
        name="alpha",
        about="first",
        model="gpt-4o-mini",
        instructions=["be brief"],
        metadata={"team": "qa", "tier": 1},
    )
    assert agent.id and agent.name == "alpha" and agent.created_at is not None

    got = client.agents.get(agent.id)
    assert (got.name, got.about, got.model, got.instructions) == (
        "alpha",
        "first",
        "gpt-4o-mini",
        ["be brief"],
    )
    assert got.metadata == {"team": "qa", "tier": 1}

    patched = client.agents.update(agent.id, about="patched", metadata={"extra": True})
    assert patched.name == "alpha", "PATCH must leave unspecified fields alone"
    assert patched.about == "patched"
    assert patched.metadata == {"team": "qa", "tier": 1, "extra": True}
    assert patched.updated_at >= got.updated_at

    reset = client.agents.reset(agent.id, name="alpha-2")
    assert reset.id == agent.id and reset.name == "alpha-2"
    assert reset.about in (None, ""), "PUT replaces the agent: fields not given are cleared"
    assert not reset.instructions and not reset.metadata
    assert client.agents.get(agent.id).name == "alpha-2"

    fixed_id = str(uuid.uuid4())
    created = client.agents.create_or_update(fixed_id, name="upserted")
    assert created.id == fixed_id and created.name == "upserted"
    updated = client.agents.create_or_update(fixed_id, name="upserted-again")
    assert updated.id == fixed_id and updated.name == "upserted-again"

    deleted = client.agents.delete(agent.id)
    assert deleted.id == agent.id and deleted.deleted_at is not None
    with pytest.raises(NotFoundError):
        client.agents.get(agent.id)
    with pytest.raises(NotFoundError):
        client.agents.delete(agent.id)
    assert [a.id for a in client.agents.list()] == [fixed_id]

    models = client.agents.list_models()
    assert isinstance(models.models, list)


async def test_agents_crud(client):
    await in_thread(_agents_crud, client)


def _agents_pagination(client: Julep) -> None:
    ids = [client.agents.create(name=f"page-{i}").id for i in range(7)]

    first = client.agents.list(limit=3, direction="asc")
    assert [a.id for a in first.items] == ids[:3]
    page: Any = first
    pages = [[a.id for a in first.items]]
    while page.has_next_page():
        page = page.get_next_page()
        pages.append([a.id for a in page.items])
    assert pages == [ids[:3], ids[3:6], ids[6:]] or pages == [ids[:3], ids[3:6], ids[6:], []]

    # Auto-iteration walks every page and stops at the first empty one.
    assert [a.id for a in client.agents.list(limit=2, direction="asc")] == ids
    assert [a.id for a in client.agents.list(limit=2, direction="desc")] == ids[::-1]
    assert [a.id for a in client.agents.list(limit=1000, offset=5, direction="asc")] == ids[5:]
    named = [a.name for a in client.agents.list(direction="asc", sort_by="updated_at")]
    assert named == [f"page-{i}" for i in range(7)]


async def test_agents_list_paginates_to_the_end(client):
    await in_thread(_agents_pagination, client)


def _agents_metadata_filter(client: Julep) -> None:
    qa = client.agents.create(name="qa", metadata={"team": "qa"}).id
    client.agents.create(name="ops", metadata={"team": "ops"})
    client.agents.create(name="none")
    assert [a.id for a in client.agents.list(metadata_filter={"team": "qa"})] == [qa]


async def test_agents_list_metadata_filter(client):
    await in_thread(_agents_metadata_filter, client)


# Users -------------------------------------------------------------------------------------------------------


def _users_crud(client: Julep) -> None:
    empty = client.users.create()
    assert empty.id and empty.name is None

    user = client.users.create(name="Ada", about="mathematician", metadata={"lang": "en"})
    got = client.users.get(user.id)
    assert (got.name, got.about, got.metadata) == ("Ada", "mathematician", {"lang": "en"})

    patched = client.users.update(user.id, about="analyst", metadata={"tz": "UTC"})
    assert (patched.name, patched.about) == ("Ada", "analyst")
    assert patched.metadata == {"lang": "en", "tz": "UTC"}

    reset = client.users.reset(user.id, name="Ada L.")
    assert reset.name == "Ada L." and reset.about in (None, "") and not reset.metadata

    fixed_id = str(uuid.uuid4())
    assert client.users.create_or_update(fixed_id, name="Grace").id == fixed_id
    assert client.users.create_or_update(fixed_id, name="Grace H.").name == "Grace H."

    created = [client.users.create(name=f"u{i}").id for i in range(4)]
    listed = [u.id for u in client.users.list(limit=2, direction="asc")]
    assert listed == [empty.id, user.id, fixed_id, *created]

    assert client.users.delete(user.id).id == user.id
    with pytest.raises(NotFoundError):
        client.users.get(user.id)
    with pytest.raises(NotFoundError):
        client.users.update(user.id, about="ghost")
    assert user.id not in [u.id for u in client.users.list()]


async def test_users_crud(client):
    await in_thread(_users_crud, client)


# Tools -------------------------------------------------------------------------------------------------------

LOOKUP_PARAMETERS = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def _tools_crud(client: Julep) -> None:
    agent_id = make_agent(client)
    lookup = client.agents.tools.create(
        agent_id,
        name="lookup",
        type="function",
        description="Find things",
        function={"description": "look up", "parameters": LOOKUP_PARAMETERS},
    )
    assert lookup.id and lookup.name == "lookup" and lookup.type == "function"
    fetch = client.agents.tools.create(
        agent_id,
        name="fetch",
        type="api_call",
        api_call={"method": "GET", "url": "https://example.com/{{q}}"},
    )
    assert fetch.type == "api_call" and fetch.api_call.url == "https://example.com/{{q}}"

    listed = {t.name: t for t in client.agents.tools.list(agent_id, limit=1)}
    assert set(listed) == {"lookup", "fetch"}
    assert listed["lookup"].function.parameters == LOOKUP_PARAMETERS

    with pytest.raises(ConflictError):
        client.agents.tools.create(agent_id, name="lookup", type="function")

    patched = client.agents.tools.update(
        lookup.id,
        agent_id=agent_id,
        description="Find anything",
        function={"description": "look up anything"},
    )
    assert patched.id == lookup.id and patched.description == "Find anything"
    assert patched.function.description == "look up anything"
    assert patched.function.parameters == LOOKUP_PARAMETERS, "PATCH deep-merges nested definitions"

    reset = client.agents.tools.reset(
        fetch.id,
        agent_id=agent_id,
        name="fetch2",
        type="api_call",
        api_call={"method": "POST", "url": "https://example.com/post"},
    )
    assert (reset.name, reset.api_call.method) == ("fetch2", "POST")

    deleted = client.agents.tools.delete(fetch.id, agent_id=agent_id)
    assert deleted.id == fetch.id
    assert [t.name for t in client.agents.tools.list(agent_id)] == ["lookup"]
    with pytest.raises(NotFoundError):
        client.agents.tools.delete(fetch.id, agent_id=agent_id)
    with pytest.raises(NotFoundError):  # a tool is reachable only through its own agent
        client.agents.tools.update(lookup.id, agent_id=make_agent(client, "other"), description="x")


async def test_agent_tools_crud(client):
    await in_thread(_tools_crud, client)


def _agent_tool_in_task(client: Julep) -> None:
    agent_id = make_agent(client)
    client.agents.tools.create(
        agent_id, name="lookup", type="function", function={"parameters": LOOKUP_PARAMETERS}
    )
    steps = [{"tool": "lookup", "arguments": {"q": "$ _.query"}}, {"evaluate": {"found": "$ _.hits"}}]

    with pytest.raises(UnprocessableEntityError) as caught:
        client.tasks.create(agent_id, name="no-inherit", inherit_tools=False, main=steps)
    assert "main[0].tool" in [p["loc"] for p in caught.value.body["error"]["details"]]

    task = client.tasks.create(agent_id, name="uses-lookup", main=steps)
    execution = client.executions.create(task.id, input={"query": "mint"})
    # A function tool is answered by the client: the execution waits with the call it wants made.
    waiting = wait_status(client, execution.id, {"awaiting_input"} | TERMINAL)
    assert waiting.status == "awaiting_input", waiting
    wait = all_transitions(client, execution.id)[-1]
    assert wait.type == "wait"
    assert wait.output["tool_call"]["name"] == "lookup"
    assert wait.output["tool_call"]["arguments"] == {"q": "mint"}

    client.executions.change_status(execution.id, status="running", input={"hits": [1, 2]})
    done = wait_status(client, execution.id)
    assert done.status == "succeeded", done
    assert done.output == {"found": [1, 2]}


async def test_agent_function_tool_used_by_a_task(client):
    await in_thread(_agent_tool_in_task, client)


# Tasks and executions --------------------------------------------------------------------------------------------


def _task_with_subworkflow(client: Julep) -> None:
    agent_id = make_agent(client)
    task = make_task(client, agent_id, GREETER_YAML)
    assert task.id and task.name == "greeter"
    assert task.model_extra["shout"][0]["evaluate"] == {"loud": '$ _.text.upper() + "!"'}
    fetched = client.tasks.get(task.id)
    assert fetched.id == task.id and "shout" in fetched.model_extra
    assert fetched.input_schema["required"] == ["name"]
    assert [t.id for t in client.tasks.list(agent_id)] == [task.id]

    execution = client.executions.create(task.id, input={"name": "Mint"})
    assert execution.id and execution.task_id == task.id and execution.status in STATUSES
    assert execution.input == {"name": "Mint"}

    done = wait_status(client, execution.id)
    assert done.status == "succeeded", done
    assert done.output == {"result": "HELLO, MINT!", "length": len("Hello, Mint")}

    rows = all_transitions(client, execution.id)
    for row in rows:
        check_transition_shape(row, execution.id)
    types = [r.type for r in rows]
    assert types[0] == "init" and types[-1] == "finish"
    assert types.count("init_branch") == 1 and types.count("finish_branch") == 1
    assert types.index("init_branch") < types.index("finish_branch")
    branch = rows[types.index("init_branch")]
    assert branch.current.workflow == "shout" and branch.output == {"text": "Hello, Mint"}
    assert branch.current.scope_id != rows[0].current.scope_id
    assert rows[-1].output == done.output
    assert any(r.step_label == "greet" for r in rows)
    assert done.transition_count in (None, len(rows))

    # Ordering and a single transition by id.
    newest_first = list(client.executions.transitions.list(execution.id, direction="desc", limit=1000).items)
    assert [r.id for r in newest_first] == [r.id for r in reversed(rows)]
    one = client.executions.transitions.retrieve(rows[1].id, execution_id=execution.id)
    assert one.id == rows[1].id and one.type == rows[1].type
    scoped = client.executions.transitions.list(execution.id, scope_id=branch.current.scope_id).items
    assert {r.current.scope_id for r in scoped} == {branch.current.scope_id}


async def test_task_from_yaml_with_subworkflow_runs(client):
    await in_thread(_task_with_subworkflow, client)


def _task_versions(client: Julep) -> None:
    agent_id = make_agent(client)
    first = make_task(client, agent_id, GREETER_YAML)
    doc = yaml.safe_load(GREETER_YAML)
    doc["shout"] = [{"evaluate": {"loud": "$ _.text + '?'"}}]
    second = client.tasks.create_or_update(first.id, agent_id=agent_id, **doc)
    assert second.id == first.id
    assert second.model_extra["version"] == first.model_extra["version"] + 1
    done = wait_status(client, client.executions.create(first.id, input={"name": "v2"}).id)
    assert done.output["result"] == "Hello, v2?"


async def test_task_create_or_update_makes_a_new_version(client):
    await in_thread(_task_versions, client)


def _executions_list(client: Julep) -> None:
    agent_id = make_agent(client)
    task = make_task(client, agent_id, GREETER_YAML)
    ids = [client.executions.create(task.id, input={"name": f"n{i}"}).id for i in range(5)]
    for execution_id in ids:
        assert wait_status(client, execution_id).status == "succeeded"
    assert [e.id for e in client.executions.list(task.id, limit=2, direction="asc")] == ids
    assert {e.status for e in client.executions.list(task.id)} == {"succeeded"}


async def test_executions_list_paginates(client):
    await in_thread(_executions_list, client)


def _resume(client: Julep) -> None:
    agent_id = make_agent(client)
    task = make_task(client, agent_id, ASK_YAML)
    execution = client.executions.create(task.id, input={})

    waiting = wait_status(client, execution.id, {"awaiting_input"} | TERMINAL)
    assert waiting.status == "awaiting_input", waiting
    rows = all_transitions(client, execution.id)
    assert rows[-1].type == "wait"
    assert rows[-1].output == {"info": {"question": "What is your favourite number?"}}

    changed = client.executions.change_status(execution.id, status="running", input={"number": 21})
    assert changed["id"] == execution.id and changed["status"] in STATUSES

    done = wait_status(client, execution.id)
    assert done.status == "succeeded", done
    assert done.output == {"doubled": 42}
    types = [r.type for r in all_transitions(client, execution.id)]
    assert types[types.index("wait") + 1] == "resume"
    assert types[-1] == "finish"

    with pytest.raises(ConflictError):  # it is no longer waiting
        client.executions.change_status(execution.id, status="running", input={"number": 1})


async def test_resume_from_awaiting_input(client):
    await in_thread(_resume, client)


def _cancel(client: Julep) -> None:
    agent_id = make_agent(client)
    ask = make_task(client, agent_id, ASK_YAML)
    sleepy = make_task(client, agent_id, SLEEPY_YAML.replace("{seconds}", "300"))

    waiting = client.executions.create(ask.id, input={})
    assert wait_status(client, waiting.id, {"awaiting_input"} | TERMINAL).status == "awaiting_input"
    sleeping = client.executions.create(sleepy.id, input={})
    assert wait_status(client, sleeping.id, {"running"} | TERMINAL).status == "running"

    for execution in (waiting, sleeping):
        client.executions.change_status(execution.id, status="cancelled", reason="no longer needed")
        done = wait_status(client, execution.id)
        assert done.status == "cancelled", done
        rows = all_transitions(client, execution.id)
        assert rows[-1].type == "cancelled"
        assert [r.type for r in rows].count("cancelled") == 1
        with pytest.raises(ConflictError):
            client.executions.change_status(execution.id, status="cancelled")
        with pytest.raises(ConflictError):
            client.executions.change_status(execution.id, status="running", input={})
        assert client.executions.get(execution.id).status == "cancelled"


async def test_cancel_waiting_and_sleeping_executions(client):
    await in_thread(_cancel, client)


# Streams -----------------------------------------------------------------------------------------------------


def _status_stream(client: Julep) -> None:
    agent_id = make_agent(client)
    task = make_task(client, agent_id, SLEEPY_YAML.replace("{seconds}", "1"))
    execution = client.executions.create(task.id, input={"x": 1})

    events = list(client.executions.status.stream(execution.id))  # ends by itself at the final status
    assert events, "the stream sent nothing"
    assert {e.id for e in events} == {execution.id}
    assert all(e.status in STATUSES for e in events)
    assert events[-1].status == "succeeded"
    assert events[-1].output == {"done": True}
    assert all(e.status not in TERMINAL for e in events[:-1])
    counts = [e.transition_count for e in events]
    assert counts == sorted(counts)

    # On a finished execution the stream sends the final state once and closes.
    again = list(client.executions.status.stream(execution.id))
    assert [e.status for e in again] == ["succeeded"]


async def test_status_stream_until_final_status(client):
    await in_thread(_status_stream, client)


def _transitions_stream(client: Julep) -> None:
    agent_id = make_agent(client)
    task = make_task(client, agent_id, SLEEPY_YAML.replace("{seconds}", "1"))
    execution = client.executions.create(task.id, input={})

    body = client.executions.transitions.stream(execution.id)  # blocks until the execution ends
    assert isinstance(body, str), body
    streamed = parse_sse(body)
    listed = all_transitions(client, execution.id)
    assert [t["id"] for t in streamed] == [t.id for t in listed]
    assert [t["type"] for t in streamed][0] == "init"
    assert streamed[-1]["type"] == "finish"
    assert all(t["execution_id"] == execution.id for t in streamed)

    resumed = parse_sse(client.executions.transitions.stream(execution.id, next_page_token="2"))
    assert [t["id"] for t in resumed] == [t.id for t in listed[2:]]


async def test_transitions_stream_returns_the_transitions(client):
    await in_thread(_transitions_stream, client)


# Errors through the SDK --------------------------------------------------------------------------------------------


def _final_errors(url: str, key: str) -> None:
    paths: list[str] = []
    http = httpx.Client(event_hooks={"request": [lambda request: paths.append(request.url.path)]})
    with Julep(api_key=key, base_url=url, http_client=http) as sdk:  # the SDK's default: 5 retries
        agent_id = sdk.agents.create(name="retry").id
        task = make_task(sdk, agent_id, GREETER_YAML)
        execution = sdk.executions.create(task.id, input={"name": "x"})
        wait_status(sdk, execution.id)
        paths.clear()
        started = time.monotonic()
        with pytest.raises(ConflictError) as caught:
            sdk.executions.change_status(execution.id, status="cancelled")
        assert caught.value.status_code == 409 and "succeeded" in caught.value.body["error"]["message"]
        with pytest.raises(UnprocessableEntityError):
            sdk.executions.create(task.id, input={"name": 5})
        assert paths == [f"/executions/{execution.id}", f"/tasks/{task.id}/executions"], "retried"
        assert time.monotonic() - started < 5


async def test_errors_are_final_for_the_sdk_default_retries(stack, api_key):
    await in_thread(_final_errors, stack.url, api_key)


def _first_step_reads_its_own_input(client: Julep) -> None:
    # Julep's docs and examples read the execution input as `steps[0].input` in the first step itself.
    agent_id = make_agent(client)
    task = client.tasks.create(agent_id, name="crawl", main=[{"evaluate": {"url": "$ steps[0].input.url"}}])
    done = wait_status(client, client.executions.create(task.id, input={"url": "https://example.com"}).id)
    assert done.status == "succeeded", done
    assert done.output == {"url": "https://example.com"}


async def test_first_step_reads_steps_0_input(client):
    await in_thread(_first_step_reads_its_own_input, client)
