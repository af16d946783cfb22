"""System tools speak Julep v1's calling convention, one real execution per operation.

Each case calls one (resource, subresource, operation) the way a Julep task does (Julep's argument names:
`agent_id`, `user_id`, `session_id`, `task_id`, `doc_id`; a `data` body for creates) and checks the answer
has Julep's shape: list operations return lists with their filters applied, docs carry `content` as a list
of chunks, history entries carry `content` as a list of parts, deletes answer `{id, deleted_at}`. Every
operation Mint has (workflows/system_ops.py) must have a case here.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import pytest_asyncio

from tests.helpers import create_task, run_task, start, wait_for_status
from workflows.system_ops import OPERATIONS, dotted

TINY_TASK = {"name": "tiny", "main": [{"evaluate": {"x": "$ 1"}}]}
WAITING_TASK = {"name": "waits", "main": [{"wait_for_input": {"info": {"question": "$ 'ok?'"}}}]}


@dataclass
class World:
    """What the cases read and change, made once for the module by one developer of its own."""

    api: httpx.AsyncClient
    runner: str  # the agent that owns the tasks that make the calls, so they stay out of the others' lists
    ids: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> str:
        return self.ids[name]


Arguments = Callable[[World, dict[str, Any]], dict[str, Any]]
Check = Callable[[Any, World, dict[str, Any]], Awaitable[None] | None]
Prepare = Callable[[World], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Case:
    call: str  # resource[.subresource].operation
    arguments: Arguments
    check: Check
    prepare: Prepare | None = None  # makes what the case changes (a victim to delete), by name
    label: str = ""

    @property
    def id(self) -> str:
        return self.call + (f" [{self.label}]" if self.label else "")


async def post(api: httpx.AsyncClient, path: str, body: Any) -> dict[str, Any]:
    response = await api.post(path, json=body)
    assert response.status_code in (200, 201), response.text
    return response.json()


async def status(api: httpx.AsyncClient, path: str) -> int:
    return (await api.get(path)).status_code


def fill(value: Any, ids: dict[str, str]) -> Any:
    """`{red}`-style names in a body's strings, filled with the world's ids."""
    if isinstance(value, str):
        return value.format(**ids) if value.startswith("{") else value
    if isinstance(value, dict):
        return {k: fill(v, ids) for k, v in value.items()}
    return value


# --- the world ----------------------------------------------------------------------------------------------


async def build(api: httpx.AsyncClient) -> World:
    world = World(api, (await post(api, "/agents", {"name": "runner"}))["id"])
    ids = world.ids
    for name, team in (("red", "red"), ("red2", "red"), ("blue", "blue")):
        body = {"name": name, "model": "gpt-4o-mini", "metadata": {"team": team}}
        ids[name] = (await post(api, "/agents", body))["id"]
    for name, ppid in (("ada", "p-1"), ("bob", "p-2")):
        ids[name] = (await post(api, "/users", {"name": name, "metadata": {"ppid": ppid}}))["id"]
    hooks = {"title": "Hooks", "content": "Stop scrolling now", "metadata": {"kind": "hooks"}}
    ids["hooks_doc"] = (await post(api, f"/agents/{ids['red']}/docs", hooks))["id"]
    other = {"title": "Other", "content": "Nothing to see", "metadata": {"kind": "other"}}
    ids["other_doc"] = (await post(api, f"/agents/{ids['red']}/docs", other))["id"]
    persona = {"title": "Persona", "content": "Ada likes proofs by induction"}
    ids["persona_doc"] = (await post(api, f"/users/{ids['ada']}/docs", persona))["id"]
    session = {
        "agent": ids["red"],
        "user": ids["ada"],
        "situation": "tutoring",
        "metadata": {"topic": "math"},
    }
    ids["session"] = (await post(api, "/sessions", session))["id"]
    await post(api, "/sessions", {"agent": ids["blue"], "metadata": {"topic": "art"}})
    await post(api, f"/sessions/{ids['session']}/chat", {"messages": [{"role": "user", "content": "hello"}]})
    tool = {"name": "probe", "type": "function", "description": "a function tool"}
    ids["tool"] = (await post(api, f"/agents/{ids['red']}/tools", tool))["id"]
    ids["task"] = (await create_task(api, ids["red"], TINY_TASK))["id"]
    execution = await start(api, ids["task"])
    ids["execution"] = (await wait_for_status(api, execution["id"]))["id"]
    return world


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def world(model_stack, store) -> AsyncIterator[World]:
    _, key = await store.create_developer("system-tools")
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=model_stack.url, headers=headers, timeout=60) as api:
        yield await build(api)


# --- victims: what a case changes or deletes, made for it alone ----------------------------------------------


def made(path: str, body: Any) -> Prepare:
    """A resource made by POST `path` (`{red}`-style names filled in, in the body too), as `victim`."""

    async def prepare(world: World) -> dict[str, Any]:
        created = await post(world.api, path.format(**world.ids), fill(body, world.ids))
        return {"victim": created["id"]}

    return prepare


async def waiting_execution(world: World) -> dict[str, Any]:
    task = await create_task(world.api, world["blue"], WAITING_TASK)
    execution = await start(world.api, task["id"])
    await wait_for_status(world.api, execution["id"], {"awaiting_input"})
    return {"victim": execution["id"]}


# --- checks -----------------------------------------------------------------------------------------------


def ids_of(items: Any) -> list[str]:
    assert isinstance(items, list), f"Julep's list operations return lists, not {items!r}"
    return [item["id"] for item in items]


def deleted(path: str) -> Check:
    """Julep's delete answer ({id, deleted_at}), and the resource is gone."""

    async def check(out: Any, world: World, extra: dict[str, Any]) -> None:
        assert out["id"] == extra["victim"] and out["deleted_at"]
        assert await status(world.api, path.format(**world.ids, **extra)) == 404

    return check


def doc_shaped(doc: dict[str, Any], title: str, content: list[str]) -> bool:
    """Julep's docs carry `content` as the list of their chunks, even for one."""
    return doc["title"] == title and doc["content"] == content


def new_id() -> str:
    return str(uuid.uuid4())


def _person_cases(kind: str, collection: str) -> list[Case]:
    """agent.* and user.*: the same operations under each one's id name."""
    one = kind + "_id"
    body = {"name": f"made {kind}"}
    return [
        Case(
            f"{kind}.get",
            lambda w, _: {one: w["red" if kind == "agent" else "ada"]},
            lambda out, w, _: (
                (out["id"], out["name"]) == ((w["red"], "red") if kind == "agent" else (w["ada"], "ada"))
            ),
        ),
        Case(
            f"{kind}.create",
            lambda w, _: {"data": body},
            lambda out, w, _: out["name"] == body["name"],
            label="data",
        ),
        Case(
            f"{kind}.create",
            lambda w, x: {one: x["id"], **body},
            lambda out, w, x: out["id"] == x["id"] and out["name"] == body["name"],
            prepare=lambda w: _fresh_id(),
            label="own id, fields flat",
        ),
        Case(
            f"{kind}.update",
            lambda w, x: {one: x["victim"], "data": {"name": "renamed", "about": "new"}},
            lambda out, w, x: (
                (out["id"], out["name"], out["about"], out["metadata"]) == (x["victim"], "renamed", "new", {})
            ),
            prepare=made(collection, {"name": "old", "about": "old", "metadata": {"k": 1}}),
            label="a whole replacement",
        ),
        Case(
            f"{kind}.patch",
            lambda w, x: {one: x["victim"], "about": "patched"},
            lambda out, w, x: (out["name"], out["about"]) == ("kept", "patched"),
            prepare=made(collection, {"name": "kept", "about": "old"}),
        ),
        Case(
            f"{kind}.delete",
            lambda w, x: {one: x["victim"]},
            deleted(collection + "/{victim}"),
            prepare=made(collection, {"name": "doomed"}),
        ),
        Case(
            f"{kind}.create_or_update",
            lambda w, x: {one: x["id"], "name": "upserted"},
            lambda out, w, x: (out["id"], out["name"]) == (x["id"], "upserted"),
            prepare=lambda w: _fresh_id(),
        ),
    ]


async def _fresh_id() -> dict[str, Any]:
    return {"id": new_id()}


async def _agent_doc_search(out: Any, world: World, _: dict[str, Any]) -> None:
    assert [d["id"] for d in out["docs"]] == [world["hooks_doc"]], out


CASES: list[Case] = [
    # Agents and users: lists filter, page and sort as Julep's do.
    Case(
        "agent.list",
        lambda w, _: {"metadata_filter": {"team": "red"}, "sort_by": "created_at", "direction": "asc"},
        lambda out, w, _: ids_of(out) == [w["red"], w["red2"]],
        label="metadata_filter",
    ),
    Case(
        "agent.list",
        lambda w, _: {"metadata_filter": {"team": "red"}, "limit": "1", "offset": 1, "direction": "asc"},
        lambda out, w, _: ids_of(out) == [w["red2"]],
        label="limit and offset",
    ),
    Case(
        "agent.list",
        lambda w, _: {"metadata_filter": {"team": "red"}, "sort_by": "updated_at", "direction": "desc"},
        lambda out, w, _: ids_of(out) == [w["red2"], w["red"]],
        label="sort_by and direction",
    ),
    Case(
        "user.list",
        lambda w, _: {
            "limit": "1",
            "sort_by": "created_at",
            "direction": "desc",
            "metadata_filter": {"ppid": "p-1"},
        },
        lambda out, w, _: ids_of(out) == [w["ada"]],
        label="cookbook 09's ppid lookup",
    ),
    *_person_cases("agent", "/agents"),
    *_person_cases("user", "/users"),
    # Docs of agents and users: `data` bodies, lists of chunks.
    Case(
        "agent.doc.list",
        lambda w, _: {"agent_id": w["red"], "metadata_filter": {"kind": "hooks"}},
        lambda out, w, _: (
            ids_of(out) == [w["hooks_doc"]] and doc_shaped(out[0], "Hooks", ["Stop scrolling now"])
        ),
    ),
    Case(
        "user.doc.list",
        lambda w, _: {"user_id": w["ada"], "limit": "1", "sort_by": "created_at", "direction": "desc"},
        lambda out, w, _: (
            ids_of(out) == [w["persona_doc"]] and out[0]["content"] == ["Ada likes proofs by induction"]
        ),
    ),
    Case(
        "agent.doc.create",
        lambda w, _: {
            "agent_id": w["blue"],
            "data": {"title": "Storyline", "content": "Once upon a time", "metadata": {"s": 1}},
        },
        lambda out, w, _: doc_shaped(out, "Storyline", ["Once upon a time"]) and out["metadata"] == {"s": 1},
    ),
    Case(
        "user.doc.create",
        lambda w, _: {
            "user_id": w["bob"],
            "data": {"title": "Papers", "content": ["one", "two"], "embed_instruction": "Represent"},
        },
        lambda out, w, _: doc_shaped(out, "Papers", ["one", "two"]),
    ),
    Case(
        "agent.doc.delete",
        lambda w, x: {"agent_id": w["blue"], "doc_id": x["victim"]},
        deleted("/docs/{victim}"),
        prepare=made("/agents/{blue}/docs", {"title": "doomed", "content": "x"}),
    ),
    Case(
        "user.doc.delete",
        lambda w, x: {"user_id": w["bob"], "doc_id": x["victim"]},
        deleted("/docs/{victim}"),
        prepare=made("/users/{bob}/docs", {"title": "doomed", "content": "x"}),
    ),
    Case("agent.doc.search", lambda w, _: {"agent_id": w["red"], "text": "scrolling"}, _agent_doc_search),
    Case(
        "agent.doc.search",
        lambda w, _: {"agent_id": w["red"], "search_params": {"text": "scrolling", "limit": 1}},
        _agent_doc_search,
        label="search_params",
    ),
    Case(
        "user.doc.search",
        lambda w, _: {"user_id": w["ada"], "text": "induction"},
        lambda out, w, _: [d["id"] for d in out["docs"]] == [w["persona_doc"]],
    ),
    Case(
        "doc.get",
        lambda w, _: {"doc_id": w["hooks_doc"]},
        lambda out, w, _: doc_shaped(out, "Hooks", ["Stop scrolling now"]),
    ),
    Case(
        "doc.embed",
        lambda w, _: {"text": "hello"},
        lambda out, w, _: len(out["vectors"]) == 1 and len(out["vectors"][0]) > 0,
    ),
    # Agent tools and the agent's tasks (Mint's own operations beside Julep's).
    Case(
        "agent.tool.list", lambda w, _: {"agent_id": w["red"]}, lambda out, w, _: ids_of(out) == [w["tool"]]
    ),
    Case(
        "agent.tool.create",
        lambda w, _: {"agent_id": w["blue"], "data": {"name": "made_tool", "type": "function"}},
        lambda out, w, _: out["name"] == "made_tool",
    ),
    Case(
        "agent.tool.update",
        lambda w, x: {"agent_id": w["blue"], "tool_id": x["victim"], "name": "replaced", "type": "function"},
        lambda out, w, x: (out["id"], out["name"]) == (x["victim"], "replaced"),
        prepare=made("/agents/{blue}/tools", {"name": "to_replace", "type": "function"}),
    ),
    Case(
        "agent.tool.patch",
        lambda w, x: {"agent_id": w["blue"], "tool_id": x["victim"], "description": "patched"},
        lambda out, w, x: (out["name"], out["description"]) == ("to_patch", "patched"),
        prepare=made("/agents/{blue}/tools", {"name": "to_patch", "type": "function"}),
    ),
    Case(
        "agent.tool.delete",
        lambda w, x: {"agent_id": w["blue"], "tool_id": x["victim"]},
        lambda out, w, x: out["id"] == x["victim"] and out["deleted_at"],
        prepare=made("/agents/{blue}/tools", {"name": "to_delete", "type": "function"}),
    ),
    Case(
        "agent.task.list", lambda w, _: {"agent_id": w["red"]}, lambda out, w, _: ids_of(out) == [w["task"]]
    ),
    Case(
        "agent.task.create",
        lambda w, _: {"agent_id": w["blue"], "data": TINY_TASK},
        lambda out, w, _: (out["agent_id"], out["name"]) == (w["blue"], "tiny"),
    ),
    # Sessions: a partial update, history as parts.
    Case(
        "session.list",
        lambda w, _: {"metadata_filter": {"topic": "math"}},
        lambda out, w, _: ids_of(out) == [w["session"]],
    ),
    Case(
        "session.get",
        lambda w, _: {"session_id": w["session"]},
        lambda out, w, _: out["situation"] == "tutoring",
    ),
    Case(
        "session.create",
        lambda w, _: {"agent": w["red"], "situation": "browsing", "recall": "False"},
        lambda out, w, _: (out["agents"], out["situation"]) == ([w["red"]], "browsing"),
        label="fields flat, as cookbook 06",
    ),
    Case(
        "session.create",
        lambda w, x: {"session_id": x["id"], "agent": w["blue"]},
        lambda out, w, x: out["id"] == x["id"],
        prepare=lambda w: _fresh_id(),
        label="own id",
    ),
    Case(
        "session.update",
        lambda w, x: {"session_id": x["victim"], "situation": "updated"},
        lambda out, w, x: (
            (out["situation"], out["users"], out["system_template"], out["metadata"])
            == ("updated", [w["ada"]], "Be kind.", {"topic": "kept"})
        ),
        prepare=made(
            "/sessions",
            {"agent": "{red}", "user": "{ada}", "system_template": "Be kind.", "metadata": {"topic": "kept"}},
        ),
        label="only some fields",
    ),
    Case(
        "session.patch",
        lambda w, x: {"session_id": x["victim"], "metadata": {"more": 1}},
        lambda out, w, x: out["metadata"] == {"topic": "kept", "more": 1},
        prepare=made("/sessions", {"agent": "{red}", "metadata": {"topic": "kept"}}),
    ),
    Case(
        "session.delete",
        lambda w, x: {"session_id": x["victim"]},
        deleted("/sessions/{victim}"),
        prepare=made("/sessions", {"agent": "{red}"}),
    ),
    Case(
        "session.create_or_update",
        lambda w, x: {"session_id": x["id"], "agent": w["red"], "situation": "upserted"},
        lambda out, w, x: (out["id"], out["situation"]) == (x["id"], "upserted"),
        prepare=lambda w: _fresh_id(),
    ),
    Case(
        "session.chat",
        lambda w, x: {"session_id": x["victim"], "messages": [{"role": "user", "content": "hi there"}]},
        lambda out, w, x: out["choices"][0]["message"]["content"] == "echo: hi there",
        prepare=made("/sessions", {"agent": "{red}"}),
    ),
    Case(
        "session.history",
        lambda w, _: {"session_id": w["session"]},
        lambda out, w, _: (
            [(e["role"], e["content"]) for e in out["entries"]]
            == [
                ("user", [{"type": "text", "text": "hello"}]),
                ("assistant", [{"type": "text", "text": "echo: hello"}]),
            ]
        ),
    ),
    Case(
        "session.render",
        lambda w, _: {"session_id": w["session"], "messages": [{"role": "user", "content": "next"}]},
        lambda out, w, _: out["messages"][-1] == {"role": "user", "content": "next"},
    ),
    # Tasks and executions.
    Case("task.list", lambda w, _: {"agent_id": w["red"]}, lambda out, w, _: ids_of(out) == [w["task"]]),
    Case(
        "task.get",
        lambda w, _: {"task_id": w["task"]},
        lambda out, w, _: (out["id"], out["name"]) == (w["task"], "tiny"),
    ),
    Case(
        "task.create",
        lambda w, _: {"agent_id": w["blue"], "data": {**TINY_TASK, "name": "made task"}},
        lambda out, w, _: (out["agent_id"], out["name"], out["version"]) == (w["blue"], "made task", 1),
    ),
    Case(
        "task.create",
        lambda w, x: {"agent_id": w["blue"], "task_id": x["id"], "data": TINY_TASK},
        lambda out, w, x: out["id"] == x["id"],
        prepare=lambda w: _fresh_id(),
        label="own id",
    ),
    Case(
        "task.update",
        lambda w, x: {"task_id": x["victim"], "data": {**TINY_TASK, "name": "renamed"}},
        lambda out, w, x: (
            (out["id"], out["name"], out["version"], out["agent_id"])
            == (x["victim"], "renamed", 2, w["blue"])
        ),
        prepare=made("/agents/{blue}/tasks", TINY_TASK),
    ),
    Case(
        "task.delete",
        lambda w, x: {"task_id": x["victim"]},
        deleted("/tasks/{victim}"),
        prepare=made("/agents/{blue}/tasks", TINY_TASK),
    ),
    Case(
        "task.create_or_update",
        lambda w, x: {"agent_id": w["blue"], "task_id": x["id"], "data": TINY_TASK},
        lambda out, w, x: (out["id"], out["version"]) == (x["id"], 1),
        prepare=lambda w: _fresh_id(),
    ),
    Case(
        "task.execution.create",
        lambda w, _: {"task_id": w["task"], "data": {"input": {"n": 1}}},
        lambda out, w, _: _finishes(out, w),
    ),
    Case(
        "task.execution.list",
        lambda w, _: {"task_id": w["task"], "direction": "asc", "limit": 1},
        lambda out, w, _: ids_of(out) == [w["execution"]],
    ),
    Case(
        "execution.get",
        lambda w, _: {"execution_id": w["execution"]},
        lambda out, w, _: (out["id"], out["status"]) == (w["execution"], "succeeded"),
    ),
    Case(
        "execution.change_status",
        lambda w, x: {"execution_id": x["victim"], "status": "running", "input": {"ok": True}},
        lambda out, w, x: _finishes(out, w),
        prepare=waiting_execution,
    ),
    Case(
        "execution.transition.list",
        lambda w, _: {"execution_id": w["execution"], "direction": "asc"},
        lambda out, w, _: (out[0]["type"], out[-1]["type"]) == ("init", "finish"),
    ),
]


async def _finishes(out: Any, world: World) -> None:
    done = await wait_for_status(world.api, out["id"])
    assert done["status"] == "succeeded", done


# --- running a case ---------------------------------------------------------------------------------------


def as_expressions(value: Any) -> Any:
    """Arguments as a task writes them: every string a `$` expression that gives it back, so no reading of
    bare strings (literal or expression) is involved."""
    if isinstance(value, str):
        return f"$ {value!r}"
    if isinstance(value, dict):
        return {k: as_expressions(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_expressions(v) for v in value]
    return value


def system_task(call: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A task with one system tool, written in Julep's fields (`resource`, `subresource`, `operation`)."""
    resource, *middle, op = call.split(".")
    spec = {"resource": resource, "subresource": middle[0] if middle else None, "operation": op}
    return {
        "name": call,
        "tools": [{"name": "op", "type": "system", "system": spec}],
        "main": [{"tool": "op", "arguments": as_expressions(arguments)}],
    }


async def run_call(world: World, call: str, arguments: dict[str, Any]) -> dict[str, Any]:
    execution, _ = await run_task(world.api, system_task(call, arguments), agent_id=world.runner)
    return execution


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
async def test_a_system_operation_answers_as_julep(world, case):
    extra = await case.prepare(world) if case.prepare else {}
    execution = await run_call(world, case.call, case.arguments(world, extra))
    assert execution["status"] == "succeeded", execution["error"]
    verdict = case.check(execution["output"], world, extra)
    if inspect.isawaitable(verdict):
        await verdict
    else:
        assert verdict is not False, f"unexpected answer: {execution['output']!r}"


def test_every_operation_has_a_case():
    covered = {c.call for c in CASES}
    assert covered == {dotted(k) for k in OPERATIONS}, sorted(covered ^ {dotted(k) for k in OPERATIONS})


# --- what a system tool may not do ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        {"resource": "job", "operation": "get"},
        {"resource": "agent", "operation": "embed"},
        {"resource": "user", "subresource": "tool", "operation": "list"},
        {"call": "execution.delete"},
    ],
    ids=lambda s: (
        s.get("call") or ".".join(p for p in (s["resource"], s.get("subresource"), s["operation"]) if p)
    ),
)
async def test_an_operation_mint_lacks_is_refused_when_the_task_is_created(world, spec):
    task = {
        "name": "no",
        "tools": [{"name": "op", "type": "system", "system": spec}],
        "main": [{"tool": "op"}],
    }
    response = await world.api.post(f"/agents/{world.runner}/tasks", json=task)
    assert response.status_code == 422, response.text
    name = spec.get("call") or ".".join(
        p for p in (spec["resource"], spec.get("subresource"), spec["operation"]) if p
    )
    assert f"system operation {name} is not one Mint has" in response.text
    assert response.json()["error"]["details"][0]["loc"].startswith("tools[0].system")


async def test_an_agent_tool_with_an_unknown_operation_is_refused(world):
    tool = {"name": "jobs", "type": "system", "system": {"resource": "job", "operation": "list"}}
    response = await world.api.post(f"/agents/{world.runner}/tools", json=tool)
    assert response.status_code == 422 and "system operation job.list is not one Mint has" in response.text


async def test_a_running_task_cannot_delete_itself(world):
    """Deleting a task takes its executions with it, so it waits until none is unfinished (409)."""
    task_id = new_id()
    task = system_task("task.delete", {"task_id": task_id})
    await post(world.api, f"/agents/{world.runner}/tasks/{task_id}", task)
    execution = await wait_for_status(world.api, (await start(world.api, task_id))["id"])
    assert execution["status"] == "failed" and "409" in execution["error"], execution
    assert "unfinished execution" in execution["error"]
    assert await status(world.api, f"/tasks/{task_id}") == 200


async def test_a_system_tool_reaches_only_its_own_developers_resources(world, api):
    """Another developer's agent id is, for this execution's developer, an agent that does not exist."""
    theirs = (await api.post("/agents", json={"name": "someone else's"})).json()["id"]
    execution = await run_call(world, "agent.get", {"agent_id": theirs})
    assert execution["status"] == "failed" and f"agent {theirs} not found" in execution["error"]
    execution = await run_call(world, "agent.doc.list", {"agent_id": theirs})
    assert execution["status"] == "failed" and "404" in execution["error"]
