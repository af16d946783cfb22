"""Mint answers Julep v1's REST operations as Julep's OpenAPI spec says.

Every operation in the spec (tests/fixtures/julep/, see PROVENANCE.md) that Mint serves is sent as raw HTTP to a
real stack, with a body built from the spec's own request schema (its required fields, at their defaults); the
answer must have the spec's status code and the top-level keys the spec requires, each of the spec's JSON type.
Where Mint differs, KNOWN_DIFFERENCES says why; operations it does not serve are in NOT_SERVED. Both lists only
shrink: an entry that no longer holds fails the test, asking to remove it."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.helpers import create_task, start, wait_for_status, wait_indexed
from tests.julep_spec import Operation, Spec

SPEC_SHA256 = "841e7854674689669bfb649fef87b80f3ebd952b829831b85fae5465af5b81e2"  # PROVENANCE.md

# Where Julep's routers (src/agents-api/agents_api/routers/ at the spec's commit) answer another status than the
# spec, the routers are the truth: they are what Julep's clients were written against.
ROUTER_STATUS = {
    "POST /agents/{id}": 201,  # agents/create_or_update_agent.py: status_code=HTTP_201_CREATED (spec: 200)
    "POST /users/{id}": 201,  # users/create_or_update_user.py (spec: 200)
    "POST /sessions/{id}": 201,  # sessions/create_or_update_session.py (spec: 200)
    "POST /sessions/{id}/chat": 201,  # sessions/chat.py (spec: 200)
    "DELETE /agents/{id}/tools/{child_id}": 200,  # agents/delete_agent_tool.py sets none: FastAPI's 200 (spec: 202)
}
# Where the spec's schema is a TypeSpec slip the routers never followed: the router's model, by its spec name.
ROUTER_REQUEST = {
    "POST /agents/{id}/tools": "Tools.CreateToolRequest",  # the spec says Agents.CreateAgentRequest
    "POST /agents/{id}/search": "Docs.TextOnlyDocSearchRequest",  # the spec wraps the request in {"body": ...}
    "POST /users/{id}/search": "Docs.TextOnlyDocSearchRequest",
    "POST /embed": "Docs.SingleEmbedQueryRequest",  # the spec wraps it in {"body": ...}
}
TOOL = {"$ref": "#/components/schemas/Tools.Tool"}
ITEMS = {"type": "object", "required": ["items"], "properties": {"items": {"type": "array"}}}
# Left at the spec's: PUT /executions/{id} (the router returns nothing, a null body; Mint the Execution the spec
# names) and GET /executions/{id}/transitions (the spec nests items in {transitions}; only the top is compared).
ROUTER_RESPONSE = {
    "POST /agents/{id}/tools": TOOL,  # the spec answers a string (its description); the router a Tool
    "PUT /agents/{id}/tools/{child_id}": TOOL,
    "PATCH /agents/{id}/tools/{child_id}": TOOL,
    "DELETE /agents/{id}/docs": ITEMS,  # Julep's bulk_delete_docs: a ListResponse; the spec: a bare array
    "DELETE /users/{id}/docs": ITEMS,
}

# Operations Mint serves but answers otherwise than the spec (or router) says: operation -> why.
KNOWN_DIFFERENCES: dict[str, str] = {}

# Operations Mint does not serve (a 404 or 405 today): operation -> why.
SPEC_ONLY = "Julep's routers do not serve it either (only the spec has it)"
NOT_SERVED = {
    "PUT /agents/{id}/tasks/{child_id}": SPEC_ONLY + "; Mint updates a task at PUT /tasks/{id}",
    "PATCH /agents/{id}/tasks/{child_id}": SPEC_ONLY,
    "DELETE /agents/{id}/tasks/{child_id}": SPEC_ONLY + "; Mint deletes a task at DELETE /tasks/{id}",
    "POST /executions": SPEC_ONLY + "; Mint resumes with PUT /executions/{id} {status: running}",
    # Julep's projects router mounts only POST and GET /projects.
    "POST /projects/{id}": SPEC_ONLY,
    "PUT /projects/{id}": SPEC_ONLY,
    "PATCH /projects/{id}": SPEC_ONLY,
    "DELETE /projects/{id}": SPEC_ONLY,
    "GET /projects/{id}": SPEC_ONLY,
    "POST /responses": "the Responses API is not in Mint yet",
    "GET /responses/{id}": "the Responses API is not in Mint yet",
    # The spec's {id} here is the developer's, a TypeSpec slip: Julep's routers (secrets/) and Mint serve
    # GET/POST /secrets and PUT/DELETE /secrets/{secret_id}.
    "GET /secrets/{id}": "Julep's router and Mint list at GET /secrets (Mint's GET /secrets/{id} reads one)",
    "POST /secrets/{id}": "Julep's router and Mint create at POST /secrets",
    "PUT /secrets/{id}/{child_id}": "Julep's router and Mint update at PUT /secrets/{secret_id}",
    "DELETE /secrets/{id}/{child_id}": "Julep's router and Mint delete at DELETE /secrets/{secret_id}",
}

CHAT = {"messages": [{"role": "user", "content": "hi"}]}
TASK = {"name": "spec task", "main": [{"evaluate": {"x": "1 + 1"}}]}
AGENT = {"name": "spec agent", "model": "gpt-4o-mini"}  # a model the test stack's fake model server answers
USER = {"name": "spec_user", "about": ""}
DOC = {"title": "spec doc", "content": "hello from the spec"}
FILE_CONTENT = "aGVsbG8gZnJvbSB0aGUgc3BlYw=="  # "hello from the spec"


@dataclass
class World:
    """The resources the operations act on, by the first path segment (and `parent/child` for children)."""

    ids: dict[str, str] = field(default_factory=dict)

    def bodies(self) -> dict[str, dict[str, Any]]:
        """Values laid over the spec's minimal body where that alone would not do what the operation is for."""
        return {
            "PUT /agents/{id}": AGENT,  # keeps the model the chat below needs
            # The names these resources were created with: the spec's minimal name is taken by the POSTs.
            "PUT /agents/{id}/tools/{child_id}": {"name": "spec_tool"},
            "PUT /agents/{id}/secrets/{child_id}": {"name": "spec_secret"},
            "POST /agents/{id}/tasks": TASK,
            "POST /agents/{parent_id}/tasks/{id}": TASK,
            "POST /sessions": {"agent": self.ids["agents"]},
            "POST /sessions/{id}": {"agent": self.ids["agents"]},
            "POST /sessions/{id}/chat": CHAT,
            "POST /sessions/{id}/render": CHAT,
            "POST /agents/{id}/docs": DOC,
            "POST /users/{id}/docs": DOC,
            "POST /agents/{id}/search": {"text": "hello"},
            "POST /users/{id}/search": {"text": "hello"},
            "POST /embed": {"text": "hello"},
            "PUT /executions/{id}": {"status": "cancelled"},  # the running execution
            "POST /files": {"content": FILE_CONTENT},  # base64 (the spec's minimal string is not)
            # Deletes nothing: the doc is deleted by its id after.
            "DELETE /agents/{id}/docs": {"metadata_filter": {"spec": "none"}},
            "DELETE /users/{id}/docs": {"metadata_filter": {"spec": "none"}},
        }


async def created(api: httpx.AsyncClient, path: str, body: dict[str, Any]) -> str:
    response = await api.post(path, json=body)
    assert response.status_code == 201, f"POST {path}: {response.status_code} {response.text}"
    return response.json()["id"]


async def build_world(api: httpx.AsyncClient) -> World:
    """An agent with a task, a tool, a doc and a secret; a user with a doc; a session; a finished execution
    (for reads and streams, which then end, and as a job) and a running one (to cancel); a file."""
    ids = {"agents": await created(api, "/agents", AGENT), "users": await created(api, "/users", USER)}
    agent = f"/agents/{ids['agents']}"
    ids["sessions"] = await created(api, "/sessions", {"agent": ids["agents"], "user": ids["users"]})
    ids["tasks"] = ids["agents/tasks"] = (await create_task(api, ids["agents"], TASK))["id"]
    ids["agents/tools"] = await created(api, f"{agent}/tools", {"name": "spec_tool", "type": "function"})
    ids["agents/secrets"] = await created(api, f"{agent}/secrets", {"name": "spec_secret", "value": "v"})
    for owner in ("agents", "users"):
        ids[f"{owner}/docs"] = ids["docs"] = await created(api, f"/{owner}/{ids[owner]}/docs", DOC)
        await wait_indexed(api, ids["docs"])
    execution = await start(api, ids["tasks"])
    ids["executions"] = ids["jobs"] = (await wait_for_status(api, execution["id"]))["id"]
    ids["files"] = await created(api, "/files", {"name": "spec file", "content": FILE_CONTENT})
    sleeper = await create_task(
        api, ids["agents"], {"name": "sleeper", "main": [{"sleep": {"seconds": 600}}]}
    )
    ids["running"] = (await start(api, sleeper["id"]))["id"]
    await wait_for_status(api, ids["running"], {"running"})
    return World(ids)


async def url_for(api: httpx.AsyncClient, op: Operation, world: World) -> str:
    """The operation's path with ids filled in: a new id where it creates one, a resource of its own where it
    deletes a top-level one, an unknown id where Mint has no such resource."""
    segments = op.path.strip("/").split("/")
    kind, filled = segments[0], []
    for place, segment in enumerate(segments):
        if not segment.startswith("{"):
            filled.append(segment)
        elif op.creates_at_id and place == len(segments) - 1:
            filled.append(str(uuid.uuid4()))
        elif segment == "{child_id}":
            filled.append(world.ids.get(f"{kind}/{segments[place - 1]}", str(uuid.uuid4())))
        elif op.method == "DELETE" and len(segments) == 2 and kind in ("agents", "users", "sessions"):
            bodies = {"agents": AGENT, "users": USER, "sessions": {"agent": world.ids["agents"]}}
            filled.append(await created(api, f"/{kind}", bodies[kind]))
        elif op.key == "PUT /executions/{id}":
            filled.append(world.ids["running"])
        else:
            filled.append(world.ids.get(kind, str(uuid.uuid4())))
    return "/" + "/".join(filled)


@dataclass
class Result:
    key: str
    expected: int
    got: int
    missing: list[str]
    wrong: list[str]
    answer: str  # the body, shortened, where the status differs

    @property
    def conforms(self) -> bool:
        return self.got == self.expected and not self.missing and not self.wrong


async def send(api: httpx.AsyncClient, spec: Spec, op: Operation, world: World) -> Result:
    """The operation, sent with the spec's minimal body and required query, and how its answer compares."""
    url = await url_for(api, op, world)
    schema = spec.schema(ROUTER_REQUEST[op.key]) if op.key in ROUTER_REQUEST else op.request_schema()
    body = None if schema is None else {**spec.minimal(schema), **world.bodies().get(op.key, {})}
    response = await api.request(op.method, url, json=body, params=spec.required_query(op))
    expected = ROUTER_STATUS.get(op.key, op.success)
    kind, answer = op.response()
    missing: list[str] = []
    wrong: list[str] = []
    # Streams are checked by status only; an error's body is not the success schema's.
    if kind == "application/json" and 200 <= response.status_code < 300:
        missing, wrong = spec.differences(ROUTER_RESPONSE.get(op.key, answer), response.json())
    answer = response.text[:300] if response.status_code != expected else ""
    return Result(op.key, expected, response.status_code, missing, wrong, answer)


def ordered(operations: list[Operation]) -> list[Operation]:
    """Deletes last, children before their parents, so every other operation finds what it needs."""
    return sorted(
        operations, key=lambda op: (op.method == "DELETE", -op.path.count("/") * (op.method == "DELETE"))
    )


def table(results: list[Result]) -> str:
    """One row per operation: the status the spec (or router) gives and Mint's, what differs, and the verdict."""
    rows = [("operation", "status spec/Mint", "missing keys", "wrong types", "verdict")]
    for r in results:
        verdict = "ok" if r.conforms else "known difference" if r.key in KNOWN_DIFFERENCES else "DIFFERS"
        verdict = "not served" if r.key in NOT_SERVED else verdict
        status = f"{r.expected}/{r.got}"
        rows.append((r.key, status, ", ".join(r.missing), "; ".join(r.wrong), verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[4]]) for row in rows
    )


async def test_every_operation_mint_serves_answers_as_julep_spec_says(mapi: httpx.AsyncClient) -> None:
    spec = Spec()
    assert hashlib.sha256(spec.text).hexdigest() == SPEC_SHA256, "the spec changed: update PROVENANCE.md"
    keys = {op.key for op in spec.operations}
    assert not (set(KNOWN_DIFFERENCES) | set(NOT_SERVED)) - keys, "these are not in the spec"
    assert not set(KNOWN_DIFFERENCES) & set(NOT_SERVED), "an operation is in both lists"
    world = await build_world(mapi)
    results = [await send(mapi, spec, op, world) for op in ordered(spec.operations)]
    print("\n" + table(results))

    served_now = {r.key: r.got for r in results if r.key in NOT_SERVED and r.got not in (404, 405)}
    assert not served_now, f"Mint serves these now: remove them from NOT_SERVED, {served_now}"
    checked = [r for r in results if r.key not in NOT_SERVED]
    new = {
        r.key: (r.got, r.missing, r.wrong, r.answer)
        for r in checked
        if not r.conforms and r.key not in KNOWN_DIFFERENCES
    }
    assert not new, f"answered otherwise than Julep's spec (fix, or list in KNOWN_DIFFERENCES): {new}"
    fixed = [r.key for r in checked if r.conforms and r.key in KNOWN_DIFFERENCES]
    assert not fixed, f"these conform now: remove them from KNOWN_DIFFERENCES, {fixed}"
