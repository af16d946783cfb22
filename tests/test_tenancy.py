"""Tenant isolation: developer B, holding developer A's ids, reaches none of A's resources.

Developer A creates one of everything (agent, tool, user, task, a waiting execution and one of its
transitions, an agent doc, a user doc, a session, secrets, a project and a file in it). Developer B then calls every route that takes an id with
A's ids, route by route, and each must answer 404: the same answer as for an id that does not exist, so B
learns nothing, changes nothing. The list of routes is checked against the app's own openapi.json, so a new
id-taking route fails `test_every_id_route_is_covered` until a case is added for it here.

The create-or-update routes (`POST /agents/{id}` and the like) are the one exception, by design: ids are
unique per developer, so B creating with A's id creates B's own resource (201), exactly as for an id B has
never used, and A's resource is untouched. A 409 there would tell B that the id exists.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import pytest_asyncio

from tests.helpers import create_agent, create_task, start, transitions, wait_for_status

# A's task waits for input, so its execution stays `awaiting_input` (resumable, cancellable) throughout.
WAITING_TASK = {"name": "waits", "main": [{"wait_for_input": {"info": {"question": "$ 'ok?'"}}}]}
TINY_TASK = {"name": "tiny", "main": [{"evaluate": {"x": "$ 1"}}]}
TOOL = {"name": "probe", "type": "function", "description": "a function tool"}
CHAT = {"messages": [{"role": "user", "content": "x"}]}
DOC = {"title": "t", "content": "c"}
# What create-or-update answers for an id its caller has not used (Julep v1's create_or_update: 201).
CREATED = 201
SECRET = {"name": "B_SECRET", "value": "b's value"}
A_PROJECT = "a_only"  # a project only A has


@dataclass(frozen=True)
class Case:
    """One call by B. `route` is the path as openapi.json lists it; `path` and `body` are templates
    filled with ids (`a_*` are A's, `b_*` are B's own). A create-or-update case expects CREATED and names
    `cleanup`, the path B deletes afterwards so that later cases see the world as it was."""

    method: str
    route: str
    path: str
    body: Any = None
    label: str = ""
    cleanup: str = ""

    @property
    def id(self) -> str:
        return f"{self.method} {self.route or self.path}" + (f" [{self.label}]" if self.label else "")


def _doc_cases(kind: str, owner: str, doc: str) -> list[Case]:
    """The /{owners}/{owner_id}/... routes for one owner (`agents` or `users`)."""
    return [
        Case("POST", "/{owners}/{owner_id}/docs", f"{owner}/docs", DOC, kind),
        Case("POST", "/{owners}/{owner_id}/docs/import", f"{owner}/docs/import", {"docs": [DOC]}, kind),
        Case("GET", "/{owners}/{owner_id}/docs", f"{owner}/docs", label=kind),
        Case("DELETE", "/{owners}/{owner_id}/docs/{doc_id}", f"{owner}/docs/{doc}", label=kind),
        Case("DELETE", "/{owners}/{owner_id}/docs", f"{owner}/docs", {"delete_all": True}, kind),
        Case("POST", "/{owners}/{owner_id}/search", f"{owner}/search", {"text": "x"}, kind),
    ]


# Every id-taking route, filled with A's ids. Bodies are valid for B (they name B's own agent where one is
# needed), so the only thing wrong with each request is the foreign id in its path.
ROUTES: list[Case] = [
    # Agents
    Case("GET", "/agents/{agent_id}", "/agents/{a_agent}"),
    Case("POST", "/agents/{agent_id}", "/agents/{a_agent}", {"name": "b"}, cleanup="/agents/{a_agent}"),
    Case("PUT", "/agents/{agent_id}", "/agents/{a_agent}", {"name": "b"}),
    Case("PATCH", "/agents/{agent_id}", "/agents/{a_agent}", {"about": "b"}),
    Case("DELETE", "/agents/{agent_id}", "/agents/{a_agent}"),
    # Tools
    Case("POST", "/agents/{agent_id}/tools", "/agents/{a_agent}/tools", {**TOOL, "name": "b"}),
    Case("GET", "/agents/{agent_id}/tools", "/agents/{a_agent}/tools"),
    Case("PUT", "/agents/{agent_id}/tools/{tool_id}", "/agents/{a_agent}/tools/{a_tool}", TOOL),
    Case(
        "PATCH",
        "/agents/{agent_id}/tools/{tool_id}",
        "/agents/{a_agent}/tools/{a_tool}",
        {"description": "b"},
    ),
    Case("DELETE", "/agents/{agent_id}/tools/{tool_id}", "/agents/{a_agent}/tools/{a_tool}"),
    # Users
    Case("GET", "/users/{user_id}", "/users/{a_user}"),
    Case("POST", "/users/{user_id}", "/users/{a_user}", {"name": "b"}, cleanup="/users/{a_user}"),
    Case("PUT", "/users/{user_id}", "/users/{a_user}", {"name": "b"}),
    Case("PATCH", "/users/{user_id}", "/users/{a_user}", {"about": "b"}),
    Case("DELETE", "/users/{user_id}", "/users/{a_user}"),
    # Tasks
    Case("POST", "/agents/{agent_id}/tasks", "/agents/{a_agent}/tasks", TINY_TASK),
    Case("POST", "/agents/{agent_id}/tasks/{task_id}", "/agents/{a_agent}/tasks/{a_task}", TINY_TASK),
    Case("GET", "/agents/{agent_id}/tasks", "/agents/{a_agent}/tasks"),
    Case("GET", "/tasks/{task_id}", "/tasks/{a_task}"),
    Case("PUT", "/tasks/{task_id}", "/tasks/{a_task}", TINY_TASK),
    Case("DELETE", "/tasks/{task_id}", "/tasks/{a_task}"),
    # Executions and transitions
    Case("POST", "/tasks/{task_id}/executions", "/tasks/{a_task}/executions", {"input": {}}),
    Case("GET", "/tasks/{task_id}/executions", "/tasks/{a_task}/executions"),
    Case("GET", "/executions/{execution_id}", "/executions/{a_execution}"),
    Case(
        "PUT",
        "/executions/{execution_id}",
        "/executions/{a_execution}",
        {"status": "running", "input": {}},
        "resume",
    ),
    Case("PUT", "/executions/{execution_id}", "/executions/{a_execution}", {"status": "cancelled"}, "cancel"),
    Case("GET", "/executions/{execution_id}/transitions", "/executions/{a_execution}/transitions"),
    Case(
        "GET", "/executions/{execution_id}/transitions.stream", "/executions/{a_execution}/transitions.stream"
    ),
    Case("GET", "/executions/{execution_id}/status.stream", "/executions/{a_execution}/status.stream"),
    Case("GET", "/executions/{execution_id}/timers", "/executions/{a_execution}/timers"),
    Case("GET", "/executions/{execution_id}/trace", "/executions/{a_execution}/trace"),
    Case(
        "GET",
        "/executions/{execution_id}/transitions/{transition_id}",
        "/executions/{a_execution}/transitions/{a_transition}",
    ),
    Case(
        "POST",
        "/executions/{execution_id}/restart",
        "/executions/{a_execution}/restart",
        {"from_transition": "{a_transition}"},
    ),
    # Schedules
    Case("POST", "/tasks/{task_id}/schedules", "/tasks/{a_task}/schedules", {"every": "1h", "paused": True}),
    Case("GET", "/tasks/{task_id}/schedules", "/tasks/{a_task}/schedules"),
    Case("GET", "/schedules/{schedule_id}", "/schedules/{a_schedule}"),
    Case("PATCH", "/schedules/{schedule_id}", "/schedules/{a_schedule}", {"paused": False}),
    Case("POST", "/schedules/{schedule_id}/trigger", "/schedules/{a_schedule}/trigger"),
    Case("DELETE", "/schedules/{schedule_id}", "/schedules/{a_schedule}"),
    # Docs: the generic /{owners}/... routes, once with an agent and once with a user as the owner.
    *_doc_cases("agents", "/agents/{a_agent}", "{a_agent_doc}"),
    *_doc_cases("users", "/users/{a_user}", "{a_user_doc}"),
    Case("GET", "/docs/{doc_id}", "/docs/{a_agent_doc}", label="agent doc"),
    Case("GET", "/docs/{doc_id}", "/docs/{a_user_doc}", label="user doc"),
    # Sessions
    Case("GET", "/sessions/{session_id}", "/sessions/{a_session}"),
    Case(
        "POST",
        "/sessions/{session_id}",
        "/sessions/{a_session}",
        {"agent": "{b_agent}"},
        cleanup="/sessions/{a_session}",
    ),
    Case("PUT", "/sessions/{session_id}", "/sessions/{a_session}", {"agent": "{b_agent}"}),
    Case("PATCH", "/sessions/{session_id}", "/sessions/{a_session}", {"situation": "b"}),
    Case("DELETE", "/sessions/{session_id}", "/sessions/{a_session}"),
    Case("GET", "/sessions/{session_id}/history", "/sessions/{a_session}/history"),
    Case("DELETE", "/sessions/{session_id}/history", "/sessions/{a_session}/history"),
    Case("POST", "/sessions/{session_id}/render", "/sessions/{a_session}/render", CHAT),
    Case("POST", "/sessions/{session_id}/chat", "/sessions/{a_session}/chat", CHAT),
    # Secrets: the developer's own, and an agent's
    Case("GET", "/secrets/{secret_id}", "/secrets/{a_secret}"),
    Case("PUT", "/secrets/{secret_id}", "/secrets/{a_secret}", SECRET),
    Case("DELETE", "/secrets/{secret_id}", "/secrets/{a_secret}"),
    Case("POST", "/agents/{agent_id}/secrets", "/agents/{a_agent}/secrets", SECRET),
    Case("GET", "/agents/{agent_id}/secrets", "/agents/{a_agent}/secrets"),
    Case(
        "PUT", "/agents/{agent_id}/secrets/{secret_id}", "/agents/{a_agent}/secrets/{a_agent_secret}", SECRET
    ),
    Case("DELETE", "/agents/{agent_id}/secrets/{secret_id}", "/agents/{a_agent}/secrets/{a_agent_secret}"),
    # Files, and jobs (an execution's workflow, a doc's indexing)
    Case("GET", "/files/{file_id}", "/files/{a_file}"),
    Case("DELETE", "/files/{file_id}", "/files/{a_file}"),
    Case("GET", "/jobs/{job_id}", "/jobs/{a_execution}", label="execution"),
    Case("GET", "/jobs/{job_id}", "/jobs/{a_agent_doc}", label="doc"),
]

# B reaching A's resource through B's own parent, or naming A's ids in a body: the lookups must be scoped
# to the caller, not just the parent.
MIXED: list[Case] = [
    Case("PUT", "", "/agents/{b_agent}/tools/{a_tool}", TOOL, "B's agent, A's tool"),
    Case("PATCH", "", "/agents/{b_agent}/tools/{a_tool}", {"description": "b"}, "B's agent, A's tool"),
    Case("DELETE", "", "/agents/{b_agent}/tools/{a_tool}", label="B's agent, A's tool"),
    Case("DELETE", "", "/agents/{b_agent}/docs/{a_agent_doc}", label="B's agent, A's doc"),
    Case("DELETE", "", "/users/{b_user}/docs/{a_user_doc}", label="B's user, A's doc"),
    Case(
        "GET",
        "",
        "/executions/{b_execution}/transitions/{a_transition}",
        label="B's execution, A's transition",
    ),
    Case(
        "POST",
        "",
        "/executions/{b_execution}/restart",
        {"from_transition": "{a_transition}"},
        label="B's execution, A's transition",
    ),
    Case("POST", "", "/sessions", {"agent": "{a_agent}"}, "A's agent in the body"),
    Case("POST", "", "/sessions", {"agent": "{b_agent}", "user": "{a_user}"}, "A's user in the body"),
    Case("PUT", "", "/sessions/{b_session}", {"agent": "{a_agent}"}, "A's agent in the body"),
    Case(
        "PATCH",
        "",
        "/sessions/{b_session}",
        {"agent": "{b_agent}", "user": "{a_user}"},
        "A's user in the body",
    ),
    Case("POST", "", "/sessions/{b_session}/render", {**CHAT, "agent": "{a_agent}"}, "A's agent in the body"),
    Case("PUT", "", "/agents/{b_agent}/secrets/{a_agent_secret}", SECRET, "B's agent, A's agent secret"),
    Case("DELETE", "", "/agents/{b_agent}/secrets/{a_agent_secret}", label="B's agent, A's agent secret"),
    Case("PUT", "", "/agents/{b_agent}/secrets/{a_secret}", SECRET, "B's agent, A's secret"),
    Case("GET", "", "/secrets/{a_agent_secret}", label="A's agent secret as a developer secret"),
    # Project names are per developer: A's is no project of B's.
    Case("POST", "", "/agents", {"name": "b", "project": A_PROJECT}, "A's project in the body"),
    Case("PATCH", "", "/users/{b_user}", {"project": A_PROJECT}, "A's project in the body"),
    Case(
        "POST",
        "",
        "/files",
        {"name": "b", "content": "Yg==", "project": A_PROJECT},
        "A's project in the body",
    ),
]

# B creating with A's id (the create-or-update routes), with a request otherwise valid for B.
CREATE_WITH_ID: list[Case] = [
    Case("POST", "/agents/{agent_id}", "/agents/{a_agent}", {"name": "b"}, "agent", "/agents/{a_agent}"),
    Case("POST", "/users/{user_id}", "/users/{a_user}", {"name": "b"}, "user", "/users/{a_user}"),
    Case(
        "POST",
        "/sessions/{session_id}",
        "/sessions/{a_session}",
        {"agent": "{b_agent}"},
        "session",
        "/sessions/{a_session}",
    ),
    # Under A's agent this is a plain 404 (see ROUTES); under B's own agent only the task id is foreign. The
    # task goes with B's spare agent afterwards.
    Case(
        "POST",
        "/agents/{agent_id}/tasks/{task_id}",
        "/agents/{b_spare_agent}/tasks/{a_task}",
        TINY_TASK,
        "task",
        "/agents/{b_spare_agent}",
    ),
]

# What A reads to check that B changed nothing: each path as A, compared before and after B's calls.
A_READS = [
    "/agents/{a_agent}",
    "/agents/{a_agent}/tools",
    "/agents/{a_agent}/tasks",
    "/agents/{a_agent}/docs",
    "/users/{a_user}",
    "/users/{a_user}/docs",
    "/tasks/{a_task}",
    "/tasks/{a_task}/executions",
    "/tasks/{a_task}/schedules",
    "/schedules/{a_schedule}",
    "/executions/{a_execution}",
    "/executions/{a_execution}/transitions",
    "/executions/{a_execution}/transitions/{a_transition}",
    "/docs/{a_agent_doc}",
    "/docs/{a_user_doc}",
    "/sessions/{a_session}",
    "/sessions/{a_session}/history",
    "/secrets/{a_secret}",
    "/agents/{a_agent}/secrets",
    "/files/{a_file}",
    "/jobs/{a_execution}",
]
# The resource each create-with-id case targets (the A_READS entry that must not change).
TARGET = {
    "agent": "/agents/{a_agent}",
    "user": "/users/{a_user}",
    "session": "/sessions/{a_session}",
    "task": "/tasks/{a_task}",
}


@dataclass
class World:
    a: httpx.AsyncClient
    b: httpx.AsyncClient
    ids: dict[str, str]
    before: dict[str, Any] = field(default_factory=dict)  # A_READS as A saw them before B's calls

    def fill(self, value: Any) -> Any:
        """A template (path or body) with the ids put in."""
        if isinstance(value, str):
            return value.format_map(self.ids)
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        return value


def _client(url: str, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def _created(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 201, response.text
    return response.json()


async def _a_resources(a: httpx.AsyncClient) -> dict[str, str]:
    agent = await create_agent(a, "tenant a")
    tool = _created(await a.post(f"/agents/{agent['id']}/tools", json=TOOL))
    user = _created(await a.post("/users", json={"name": "ada"}))
    task = await create_task(a, agent["id"], WAITING_TASK)
    execution = await start(a, task["id"])
    await wait_for_status(a, execution["id"], {"awaiting_input"})
    first_transition = (await transitions(a, execution["id"]))[0]
    agent_doc = _created(await a.post(f"/agents/{agent['id']}/docs", json={**DOC, "title": "a's"}))
    user_doc = _created(await a.post(f"/users/{user['id']}/docs", json={**DOC, "title": "ada's"}))
    session = _created(await a.post("/sessions", json={"agent": agent["id"], "user": user["id"]}))
    secret = _created(await a.post("/secrets", json={"name": "A_SECRET", "value": "a's value"}))
    agent_secret = _created(
        await a.post(f"/agents/{agent['id']}/secrets", json={"name": "A_SECRET", "value": "a's agent value"})
    )
    _created(await a.post("/projects", json={"name": "A's", "canonical_name": A_PROJECT}))
    file = _created(await a.post("/files", json={"name": "a.txt", "content": "YQ==", "project": A_PROJECT}))
    schedule = _created(await a.post(f"/tasks/{task['id']}/schedules", json={"every": "1h", "paused": True}))
    return {
        "a_agent": agent["id"],
        "a_tool": tool["id"],
        "a_user": user["id"],
        "a_task": task["id"],
        "a_execution": execution["id"],
        "a_transition": first_transition["id"],
        "a_agent_doc": agent_doc["id"],
        "a_user_doc": user_doc["id"],
        "a_session": session["id"],
        "a_secret": secret["id"],
        "a_agent_secret": agent_secret["id"],
        "a_file": file["id"],
        "a_schedule": schedule["id"],
    }


async def _b_resources(b: httpx.AsyncClient) -> dict[str, str]:
    """B's own parents, for the MIXED and CREATE_WITH_ID cases."""
    agent = await create_agent(b, "tenant b")
    spare_agent = await create_agent(b, "tenant b's spare")
    user = _created(await b.post("/users", json={"name": "bob"}))
    session = _created(await b.post("/sessions", json={"agent": agent["id"]}))
    execution = await start(b, (await create_task(b, agent["id"], TINY_TASK))["id"])
    return {
        "b_agent": agent["id"],
        "b_spare_agent": spare_agent["id"],
        "b_user": user["id"],
        "b_session": session["id"],
        "b_execution": execution["id"],
    }


async def _read_as_a(world: World, template: str) -> Any:
    response = await world.a.get(world.fill(template))
    assert response.status_code == 200, f"A lost {template}: {response.status_code} {response.text}"
    return response.json()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def world(stack, store) -> AsyncIterator[World]:
    _, a_key = await store.create_developer("tenant a")
    _, b_key = await store.create_developer("tenant b")
    async with _client(stack.url, a_key) as a, _client(stack.url, b_key) as b:
        world = World(a, b, {**await _a_resources(a), **await _b_resources(b)})
        world.before = {path: await _read_as_a(world, path) for path in A_READS}
        yield world


async def _call(client: httpx.AsyncClient, method: str, path: str, body: Any) -> httpx.Response:
    if path.endswith(".stream"):
        # A stream that wrongly opened would never end: read the status only, with a short timeout.
        async with client.stream(method, path, timeout=5) as response:
            if response.status_code != 200:
                await response.aread()  # an error answer is short and whole: keep it for the message
            return response
    return await client.request(method, path, json=body)


async def _expect(world: World, case: Case, response: httpx.Response) -> None:
    """404 for A's id; or, for a create-or-update route, B's own new resource under that id."""
    if not case.cleanup:
        _expect_404(case, response)
        return
    assert response.status_code == CREATED, f"{case.id}: B got {response.status_code}: {response.text[:300]}"
    cleanup = await world.b.delete(world.fill(case.cleanup))
    assert cleanup.status_code == 202, f"{case.id}: B could not delete its own copy: {cleanup.text}"


def _expect_404(case: Case, response: httpx.Response) -> None:
    detail = f"{case.id}: B got {response.status_code} for A's id: {response.text[:300]}"
    assert response.status_code == 404, detail
    # A handler's 404 names the resource ("agent ... not found"); Starlette's bare "Not Found" would mean the
    # path matched no route at all (a typo here), which proves nothing about tenancy.
    assert response.json()["error"]["message"] != "Not Found", (
        f"{case.id}: no route matched {response.request.url}"
    )


def _params(cases: list[Case]) -> list[Any]:
    return [pytest.param(case, id=case.id) for case in cases]


async def test_every_id_route_is_covered(world):
    """The app's id-taking routes are exactly the ones ROUTES fills (a new route must get a case here)."""
    spec = (await world.b.get("/openapi.json")).json()
    methods = {"get", "post", "put", "patch", "delete"}
    served = {
        (method.upper(), path)
        for path, operations in spec["paths"].items()
        if "{" in path
        for method in operations
        if method in methods
    }
    known = {(case.method, case.route) for case in ROUTES}
    assert not served - known, (
        f"id-taking routes with no cross-tenant case in ROUTES: {sorted(served - known)}"
    )
    assert not known - served, f"cases for routes the app no longer serves: {sorted(known - served)}"


async def test_b_lists_only_its_own_executions(world):
    """GET /executions lists across tasks, never across developers."""
    listed = {e["id"] for e in (await world.b.get("/executions", params={"limit": 1000})).json()["items"]}
    assert world.ids["b_execution"] in listed and world.ids["a_execution"] not in listed
    waiting = (await world.b.get("/executions", params={"status": "awaiting_input"})).json()["items"]
    assert world.ids["a_execution"] not in {e["id"] for e in waiting}


@pytest.mark.parametrize("case", _params(ROUTES))
async def test_b_gets_404_for_a_id(world, case):
    await _expect(
        world, case, await _call(world.b, case.method, world.fill(case.path), world.fill(case.body))
    )


@pytest.mark.parametrize("case", _params(MIXED))
async def test_b_gets_404_for_a_id_under_its_own_parent(world, case):
    _expect_404(case, await _call(world.b, case.method, world.fill(case.path), world.fill(case.body)))


@pytest.mark.parametrize("case", _params(CREATE_WITH_ID))
async def test_create_with_a_id_makes_b_its_own_and_changes_nothing_of_a(world, case):
    response = await world.b.request(case.method, world.fill(case.path), json=world.fill(case.body))
    assert response.status_code == CREATED, f"{case.id}: B got {response.status_code}: {response.text[:300]}"
    target = TARGET[case.label]
    assert response.json()["id"] == world.fill(target).rsplit("/", 1)[1]
    mine = await world.b.get(world.fill(target))  # B reads its own resource under the same id
    assert mine.status_code == 200 and mine.json() != world.before[target]
    assert await _read_as_a(world, target) == world.before[target]  # A's is as it was
    await _expect(world, case, response)
    assert (await world.b.get(world.fill(target))).status_code == 404


async def test_a_still_has_everything_unchanged(world):
    """Runs last (pytest keeps file order): every read A made before B's calls answers the same now."""
    after = {path: await _read_as_a(world, path) for path in A_READS}
    assert after == world.before
    assert after["/executions/{a_execution}"]["status"] == "awaiting_input"
