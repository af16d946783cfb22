"""Julep v1's files, projects and jobs, on the real stack: each operation, the project
rules of agents, users and files, limits and bad input, and one developer's ids and names out of another's
reach (the id routes are also in test_tenancy.py's list)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import uuid
from typing import Any

import asyncpg
import httpx
import pytest_asyncio

from infra.store.db import _migration_files
from infra.store.docs import DocStore
from tests.helpers import (
    api_client,
    create_agent,
    create_task,
    queued_execution,
    start,
    wait_for_status,
    wait_indexed,
)

MIB = 1024 * 1024


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def _created(response: Any) -> dict[str, Any]:
    response = await response
    assert response.status_code == 201, response.text
    return response.json()


def _error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    return response.json()["error"]["message"]


# Projects ------------------------------------------------------------------------------------------------------


async def test_every_developer_has_a_default_project(api):
    listed = await api.get("/projects")
    assert listed.status_code == 200, listed.text
    (default,) = listed.json()["items"]
    assert (default["canonical_name"], default["name"]) == ("default", "Default Project")
    assert default["metadata"]["is_default"] is True
    assert set(default) == {"id", "name", "canonical_name", "metadata", "created_at", "updated_at"}


async def test_a_project_is_created_with_its_canonical_name_or_one_made_from_its_name(api):
    named = await _created(api.post("/projects", json={"name": "Docs site", "canonical_name": "docs_site"}))
    assert (named["name"], named["canonical_name"], named["metadata"]) == ("Docs site", "docs_site", {})
    made = await _created(api.post("/projects", json={"name": "Mint project", "metadata": {"team": "a"}}))
    assert re.fullmatch(r"mint_project_[0-9a-f]{4}", made["canonical_name"]), made
    assert made["metadata"] == {"team": "a"}
    odd = await _created(api.post("/projects", json={"name": "2025 plans"}))
    assert re.fullmatch(r"project_2025_plans_[0-9a-f]{4}", odd["canonical_name"]), odd

    listed = (await api.get("/projects")).json()["items"]  # newest first
    assert [p["canonical_name"] for p in listed] == [
        odd["canonical_name"],
        made["canonical_name"],
        "docs_site",
        "default",
    ]
    oldest = (await api.get("/projects", params={"direction": "asc", "limit": 2, "offset": 1})).json()
    assert [p["canonical_name"] for p in oldest["items"]] == ["docs_site", made["canonical_name"]]
    by_team = (await api.get("/projects", params={"metadata_filter.team": "a"})).json()["items"]
    assert [p["id"] for p in by_team] == [made["id"]]


async def test_canonical_names_are_unique_whatever_their_case_and_must_be_identifiers(api):
    await _created(api.post("/projects", json={"name": "one", "canonical_name": "Shop"}))
    for taken in ("Shop", "shop", "DEFAULT"):
        message = _error(await api.post("/projects", json={"name": "two", "canonical_name": taken}), 409)
        assert "already exists" in message, message
    for bad in ("9lives", "has space", "dash-ed", ""):
        response = await api.post("/projects", json={"name": "x", "canonical_name": bad})
        assert response.status_code == 422, response.text
        assert response.json()["error"]["details"][0]["loc"] == "body.canonical_name"
    assert (await api.post("/projects", json={"canonical_name": "noname"})).status_code == 422


async def test_agents_users_and_files_name_their_project_as_julep_does(api):
    await _created(api.post("/projects", json={"name": "Shop", "canonical_name": "shop"}))
    await _created(api.post("/projects", json={"name": "Blog", "canonical_name": "blog"}))
    # POST /agents without a project puts the agent in none (Julep answers null); with one, named in any
    # case, in that project, answered as stored.
    bare = await _created(api.post("/agents", json={"name": "a"}))
    assert bare["project"] is None
    agent = await _created(api.post("/agents", json={"name": "a", "project": "SHOP"}))
    assert agent["project"] == "shop"
    assert (await api.get(f"/agents/{agent['id']}")).json()["project"] == "shop"
    # PUT and PATCH naming none keep it; naming one move it there.
    put = await api.put(f"/agents/{agent['id']}", json={"name": "b"})
    assert put.json()["project"] == "shop", put.text
    patched = await api.patch(f"/agents/{agent['id']}", json={"project": "blog"})
    assert patched.json()["project"] == "blog", patched.text
    assert (await api.patch(f"/agents/{agent['id']}", json={"about": "x"})).json()["project"] == "blog"
    # Create-or-update without a project: `default`, as Julep's.
    again = await _created(api.post(f"/agents/{agent['id']}", json={"name": "c"}))
    assert again["project"] == "default"

    # Users and files without a project go into `default`; a user's PATCH keeps its project, its PUT
    # without one puts it back in `default` (Julep's).
    user = await _created(api.post("/users", json={"name": "u"}))
    assert user["project"] == "default"
    moved = await api.patch(f"/users/{user['id']}", json={"project": "Blog"})
    assert moved.json()["project"] == "blog", moved.text
    assert (await api.patch(f"/users/{user['id']}", json={"about": "x"})).json()["project"] == "blog"
    assert (await api.put(f"/users/{user['id']}", json={"name": "v"})).json()["project"] == "default"
    file = await _created(api.post("/files", json={"name": "f", "content": _b64(b"x")}))
    assert file["project"] == "default"
    shop_file = await _created(
        api.post("/files", json={"name": "f", "content": _b64(b"x"), "project": "shop"})
    )
    assert shop_file["project"] == "shop"


async def test_naming_a_project_that_does_not_exist_is_julep_s_404(api):
    agent = await create_agent(api)
    user = await _created(api.post("/users", json={"name": "u"}))
    calls = [
        api.post("/agents", json={"name": "a", "project": "nope"}),
        api.post(f"/agents/{agent['id']}", json={"name": "a", "project": "nope"}),
        api.put(f"/agents/{agent['id']}", json={"name": "a", "project": "nope"}),
        api.patch(f"/agents/{agent['id']}", json={"project": "nope"}),
        api.post("/users", json={"name": "u", "project": "nope"}),
        api.post(f"/users/{user['id']}", json={"name": "u", "project": "nope"}),
        api.put(f"/users/{user['id']}", json={"name": "u", "project": "nope"}),
        api.patch(f"/users/{user['id']}", json={"project": "nope"}),
        api.post("/files", json={"name": "f", "content": _b64(b"x"), "project": "nope"}),
    ]
    for call in calls:
        response = await call
        assert _error(response, 404).startswith("Project 'nope' not found"), response.request.url
    # Nothing was changed or made on the way.
    assert (await api.get(f"/agents/{agent['id']}")).json()["project"] is None
    assert (await api.get(f"/users/{user['id']}")).json()["project"] == "default"
    assert (await api.get("/files")).json() == []
    assert len((await api.get("/agents")).json()["items"]) == 1


# Files ---------------------------------------------------------------------------------------------------------


async def test_a_file_is_stored_answered_with_its_hash_and_size_and_read_back(api):
    data = os.urandom(MIB) + b"\x00end"  # binary, NUL bytes included
    body = {"name": "blob.bin", "description": "random", "mime_type": "application/octet-stream"}
    created = await _created(api.post("/files", json={**body, "content": _b64(data)}))
    assert created["hash"] == hashlib.sha256(data).hexdigest() and created["size"] == len(data)
    assert base64.b64decode(created["content"]) == data
    assert {k: created[k] for k in body} == body
    assert set(created) == {*body, "id", "content", "project", "size", "hash", "created_at"}

    got = await api.get(f"/files/{created['id']}")
    assert got.status_code == 200, got.text
    assert got.json() == created

    deleted = await api.delete(f"/files/{created['id']}")
    assert deleted.status_code == 202, deleted.text
    assert deleted.json()["id"] == created["id"] and deleted.json()["jobs"] == []
    assert _error(await api.get(f"/files/{created['id']}"), 404) == f"file {created['id']} not found"
    assert (await api.delete(f"/files/{created['id']}")).status_code == 404
    assert (await api.get("/files/not-an-id")).status_code == 404


async def test_files_list_as_a_plain_array_with_their_content_newest_first(api):
    assert (await api.get("/files")).json() == []
    made = [
        await _created(api.post("/files", json={"name": f"f{i}", "content": _b64(b"%d" % i * 1000)}))
        for i in range(3)
    ]
    listed = await api.get("/files")
    assert listed.status_code == 200 and listed.headers["content-type"] == "application/json", listed.text
    assert listed.json() == made[::-1]
    page = (await api.get("/files", params={"direction": "asc", "limit": 2, "offset": 1})).json()
    assert [f["name"] for f in page] == ["f1", "f2"]


async def test_content_must_be_base64(api):
    # Line breaks and spaces are skipped (base64 tools wrap their output); anything else is refused.
    wrapped = base64.encodebytes(b"hello " * 40).decode()
    assert "\n" in wrapped
    created = await _created(api.post("/files", json={"name": "w", "content": wrapped}))
    assert base64.b64decode(created["content"]) == b"hello " * 40
    for bad in ("not base64!", "abc", "aGVsbG8=aGk=", "aGk_", "é"):
        response = await api.post("/files", json={"name": "b", "content": bad})
        message = _error(response, 422)
        assert "body.content" in message and "base64" in message, message
        assert response.json()["error"]["details"][0]["loc"] == "body.content"
    empty = await api.post("/files", json={"name": "e", "content": ""})
    assert "empty" in _error(empty, 422)
    missing = await api.post("/files", json={"name": "m"})
    assert missing.json()["error"]["details"][0]["loc"] == "body.content", missing.text
    assert (await api.get("/files")).json() == [created]


async def test_a_file_over_the_limit_is_refused_naming_it(api):
    limit = 10 * MIB  # MINT_MAX_FILE_BYTES's default
    response = await api.post("/files", json={"name": "big", "content": _b64(b"\x01" * (limit + 1))})
    message = _error(response, 413)
    assert f"{limit + 1:,} bytes" in message and f"{limit:,}" in message, message
    assert (
        "MINT_MAX_FILE_BYTES" in message and response.json()["error"]["details"][0]["loc"] == "body.content"
    )
    assert (await api.get("/files")).json() == []


# Jobs ----------------------------------------------------------------------------------------------------------


async def test_an_executions_id_is_its_workflows_job(api):
    agent = await create_agent(api)
    task = await create_task(api, agent["id"], {"name": "t", "main": [{"evaluate": {"x": "$ 1"}}]})
    done = await wait_for_status(api, (await start(api, task["id"]))["id"])
    job = await api.get(f"/jobs/{done['id']}")
    assert job.status_code == 200, job.text
    assert job.json() == {
        "id": done["id"],
        "name": "TaskExecutionWorkflow",
        "reason": "Execution status: succeeded",
        "has_progress": False,
        "progress": 0,
        "state": "succeeded",
        "created_at": job.json()["created_at"],
        "updated_at": job.json()["updated_at"],
    }
    waits = await create_task(api, agent["id"], {"name": "w", "main": [{"wait_for_input": {"info": {}}}]})
    waiting = await wait_for_status(api, (await start(api, waits["id"]))["id"], {"awaiting_input"})
    running = (await api.get(f"/jobs/{waiting['id']}")).json()
    assert (running["state"], running["reason"]) == ("in_progress", "Execution status: awaiting_input")
    await api.put(f"/executions/{waiting['id']}", json={"status": "cancelled"})
    await wait_for_status(api, waiting["id"], {"cancelled"})
    assert (await api.get(f"/jobs/{waiting['id']}")).json()["state"] == "aborted"


async def test_a_queued_execution_is_a_pending_job(stack, store):
    developer, execution_id = await queued_execution(store, "jobs")
    key = await store.add_key(developer)
    async with api_client(stack.url, key) as api:
        job = (await api.get(f"/jobs/{execution_id}")).json()
    assert (job["state"], job["reason"]) == ("pending", "Execution status: queued")


async def test_a_docs_id_is_its_indexings_job(api, api_key, store):
    agent = await create_agent(api)
    doc = await _created(api.post(f"/agents/{agent['id']}/docs", json={"title": "t", "content": "c"}))
    await wait_indexed(api, doc["id"])
    job = (await api.get(f"/jobs/{doc['id']}")).json()
    assert (job["name"], job["state"], job["reason"]) == (
        "IndexDocWorkflow",
        "succeeded",
        "Doc status: indexed",
    )
    # A doc whose indexing never started (written straight to the store) is pending, not in progress.
    developer = await store.developer_for_key(api_key)
    unstarted = await DocStore(store.pool).create(developer, "agent", agent["id"], "t", "c", {}, None)
    job = (await api.get(f"/jobs/{unstarted.id}")).json()
    assert (job["state"], job["reason"]) == ("pending", "Doc status: pending: its indexing has not started")


async def test_an_id_that_is_no_job_is_a_404_saying_what_a_job_is(api):
    agent = await create_agent(api)
    for id_ in (agent["id"], "00000000-0000-4000-8000-000000000000", "nope"):
        message = _error(await api.get(f"/jobs/{id_}"), 404)
        assert message.startswith(f"job {id_} not found") and "executions" in message, message


# Two developers -------------------------------------------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="session")
async def other(stack, store):
    _, key = await store.create_developer("files other")
    async with api_client(stack.url, key) as client:
        yield client


async def test_another_developer_reaches_none_of_them(api, other):
    shop = await _created(api.post("/projects", json={"name": "Shop", "canonical_name": "shop"}))
    file = await _created(
        api.post("/files", json={"name": "f", "content": _b64(b"secret"), "project": "shop"})
    )
    agent = await create_agent(api)
    task = await create_task(api, agent["id"], {"name": "t", "main": [{"evaluate": {"x": "$ 1"}}]})
    execution = await start(api, task["id"])
    doc = await _created(api.post(f"/agents/{agent['id']}/docs", json={"title": "t", "content": "c"}))

    for path in (f"/files/{file['id']}", f"/jobs/{execution['id']}", f"/jobs/{doc['id']}"):
        assert (await other.get(path)).status_code == 404, path
    assert (await other.delete(f"/files/{file['id']}")).status_code == 404
    assert (await other.get("/files")).json() == []
    (others_default,) = (await other.get("/projects")).json()["items"]
    assert others_default["canonical_name"] == "default" and others_default["id"] != shop["id"]
    # The other's namespace of project names is its own: `shop` is not found, then is its own to make.
    refused = await other.post("/files", json={"name": "f", "content": _b64(b"x"), "project": "shop"})
    assert _error(refused, 404).startswith("Project 'shop' not found")
    assert (await other.post("/agents", json={"name": "a", "project": "shop"})).status_code == 404
    await _created(other.post("/projects", json={"name": "Shop", "canonical_name": "shop"}))
    mine = await _created(other.post("/agents", json={"name": "a", "project": "shop"}))
    assert mine["project"] == "shop"
    # The first developer's are as they were.
    assert (await api.get(f"/files/{file['id']}")).json() == file
    assert len((await api.get("/projects")).json()["items"]) == 2


# The migration ---------------------------------------------------------------------------------------------------


async def test_the_migration_makes_projects_of_the_free_text_ones_agents_and_users_had(postgres_url):
    """Before 0021 `project` was text nothing checked: each name in use becomes a project (names differing in
    case become one), rows name it as stored, and rows without one go into `default`."""
    name = f"mig_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(postgres_url)
    await admin.execute(f"CREATE DATABASE {name}")
    conn = await asyncpg.connect(postgres_url, database=name)
    try:
        for version, sql in _migration_files():
            if version.startswith("0021"):
                break
            await conn.execute(sql)
        dev, other = str(uuid.uuid4()), str(uuid.uuid4())
        await conn.execute("INSERT INTO developers (id, name) VALUES ($1, 'a'), ($2, 'b')", dev, other)
        rows = [(dev, "Shop"), (dev, "shop"), (dev, "my project"), (dev, None), (dev, ""), (other, "Default")]
        for developer, project in rows:
            for table in ("agents", "users"):
                await conn.execute(
                    f"INSERT INTO {table} (id, developer_id, name, project) VALUES ($1, $2, 'x', $3)",
                    str(uuid.uuid4()),
                    developer,
                    project,
                )
        await conn.execute(next(sql for version, sql in _migration_files() if version.startswith("0021")))
        projects = await conn.fetch("SELECT developer_id::text, canonical_name FROM projects ORDER BY 1, 2")
        assert sorted((r[0], r[1]) for r in projects) == sorted(
            [(dev, "default"), (dev, "Shop"), (dev, "my project"), (other, "default")]
        )
        for table in ("agents", "users"):
            named = await conn.fetch(f"SELECT developer_id::text, project FROM {table} ORDER BY created_at")
            assert sorted((r[0], r[1]) for r in named) == sorted(
                [(dev, "Shop"), (dev, "Shop"), (dev, "my project"), (dev, "default"), (dev, "default")]
                + [(other, "default")]
            )
        # A developer made after it has its `default` too.
        late = str(uuid.uuid4())
        await conn.execute("INSERT INTO developers (id, name) VALUES ($1, 'c')", late)
        assert (
            await conn.fetchval("SELECT canonical_name FROM projects WHERE developer_id = $1", late)
            == "default"
        )
    finally:
        await conn.close()
        await admin.execute(f"DROP DATABASE {name}")
        await admin.close()


async def test_hostile_file_and_project_bodies_get_a_clear_4xx_and_store_nothing(api):
    """An attacker's bodies: NUL, lone surrogates, huge or nested values, wrong types. Each is a 4xx naming
    where, and nothing is stored."""
    content = _b64(b"x")
    for body, where in (
        ({"name": "a\u0000b", "content": content}, "body.name"),
        ({"name": "\ud800", "content": content}, "body.name"),
        ({"name": "n" * 100_000, "content": content}, "body.name"),
        ({"name": "n", "content": content, "mime_type": "text/\u0000plain"}, "body.mime_type"),
        ({"name": "n", "content": content, "description": "d" * 1_000_000}, "body.description"),
        ({"name": "n", "content": [content]}, "body.content"),
        ({"name": "n", "content": content, "project": "../../etc"}, "Project '../../etc' not found"),
    ):
        raw = json.dumps(body)  # (a lone surrogate goes as the JSON escape \ud800, as an attacker sends it)
        response = await api.post("/files", content=raw, headers={"Content-Type": "application/json"})
        assert 400 <= response.status_code < 500, (where, response.status_code, response.text[:200])
        assert where in response.text, (where, response.text[:300])
    nested: dict[str, Any] = {}
    for _ in range(500):
        nested = {"n": nested}
    for body, where in (
        ({"name": "p", "metadata": nested}, "body.metadata"),
        ({"name": "p", "canonical_name": "1-bad name"}, "body.canonical_name"),
        ({"name": "p\u0000"}, "body.name"),
    ):
        response = await api.post("/projects", json=body)
        assert 400 <= response.status_code < 500, (where, response.status_code, response.text[:200])
        assert where in response.text, (where, response.text[:300])
    assert (await api.get("/files")).json() == []
    assert [p["canonical_name"] for p in (await api.get("/projects")).json()["items"]] == ["default"]


async def test_many_files_at_once_are_each_stored_whole(api):
    payloads = [os.urandom(64 * 1024) for _ in range(16)]
    created = await asyncio.gather(
        *(
            _created(api.post("/files", json={"name": f"f{i}", "content": _b64(p)}))
            for i, p in enumerate(payloads)
        )
    )
    for made, payload in zip(created, payloads, strict=True):
        read = (await api.get(f"/files/{made['id']}")).json()
        assert (
            base64.b64decode(read["content"]) == payload
            and read["hash"] == hashlib.sha256(payload).hexdigest()
        )
