"""Embeddings of more than one size: a developer on Julep's 1024-dimensional model, beside one on the offline
384-dimensional default, in the same database. The 1024-d model is served by the local model server
through the real openai SDK."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from click.testing import CliRunner

from infra.store.db import connect_pool
from infra.store.docs import SUPPORTED_DIMENSIONS, DocStore, SearchQuery, vector_search_sql
from process.cli import cli
from tests.conftest import OPENAI_KEY
from tests.helpers import create_agent, wait_indexed

JULEP_SIZE = {"embedding_model": "openai/text-embedding-3-large", "embedding_dimensions": 1024}


async def _doc(api, owner: str, title: str, content: str) -> dict:
    created = await api.post(f"{owner}/docs", json={"title": title, "content": content})
    assert created.status_code == 201, created.text
    return await wait_indexed(api, created.json()["id"])


async def test_a_developer_on_1024_dimensions_indexes_and_searches_with_julep_vectors(mapi, model_server):
    changed = await mapi.put("/developer/settings", json=JULEP_SIZE)
    assert changed.status_code == 200, changed.text
    assert changed.json() == {**JULEP_SIZE, "default_budget": None}
    agent = await create_agent(mapi)
    owner = f"/agents/{agent['id']}"
    boats = await _doc(mapi, owner, "boats", "boats sail and float on water")
    await _doc(mapi, owner, "cats", "cats purr and nap in the sun")
    assert (boats["embedding_model"], boats["embedding_dimensions"]) == ("text-embedding-3-large", 1024)
    assert model_server.embedding_calls[-1]["dimensions"] == 1024

    # A client holding Julep's 1024-d vectors searches with them, as on Julep.
    vector = (await mapi.post("/embed", json={"text": "why do boats float"})).json()["vectors"][0]
    assert len(vector) == 1024
    found = await mapi.post(f"{owner}/search", json={"vector": vector, "confidence": 0})
    assert found.status_code == 200, found.text
    assert found.json()["docs"][0]["title"] == "boats" and "Warning" not in found.headers
    by_text = await mapi.post(
        f"{owner}/search", json={"text": "boats float", "mode": "vector", "confidence": 0}
    )
    assert by_text.json()["docs"][0]["title"] == "boats"
    hybrid = await mapi.post(f"{owner}/search", json={"text": "boats", "vector": vector, "confidence": 0})
    assert hybrid.json()["docs"][0]["title"] == "boats"

    # A vector of another supported size finds only docs of that size (none here), and says why.
    small = await mapi.post(f"{owner}/search", json={"vector": [1.0] + [0.0] * 383, "confidence": 0})
    assert small.status_code == 200 and small.json()["docs"] == []
    assert "1024" in small.headers["Warning"] and "384" in small.headers["Warning"]
    odd = await mapi.post(f"{owner}/search", json={"vector": [0.5] * 1000})
    assert odd.status_code == 422, odd.text
    assert [d["loc"] for d in odd.json()["error"]["details"]] == ["body.vector"]
    assert "1024" in odd.json()["error"]["message"]


async def test_another_developer_keeps_the_offline_default_in_the_same_database(mapi, store, model_stack):
    await mapi.put("/developer/settings", json=JULEP_SIZE)
    _, key = await store.create_developer("offline")
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=model_stack.url, headers=headers, timeout=30) as other:
        assert (await other.get("/developer/settings")).json()["embedding_model"] is None
        agent = await create_agent(other)
        doc = await _doc(other, f"/agents/{agent['id']}", "tea", "green tea steeps for three minutes")
        assert (doc["embedding_model"], doc["embedding_dimensions"]) == ("all-MiniLM-L6-v2", 384)
        vector = (await other.post("/embed", json={"text": "tea"})).json()["vectors"][0]
        assert len(vector) == 384


async def test_a_bad_embedding_choice_is_refused_with_its_path(mapi):
    for body, words in (
        ({"embedding_model": "all-MiniLM-L6-v2", "embedding_dimensions": 1024}, "384"),
        ({"embedding_model": "openai/text-embedding-3-small"}, "dimensions must be one of"),
        ({"embedding_model": "openai/text-embedding-3-small", "embedding_dimensions": 999}, "999"),
        ({"embedding_model": "voyage-3", "embedding_dimensions": 1024}, "unknown embedding model"),
        ({"embedding_dimensions": 1024}, "needs embedding_model"),
    ):
        refused = await mapi.put("/developer/settings", json=body)
        assert refused.status_code == 422, (body, refused.text)
        assert words in refused.json()["error"]["message"], refused.text
        assert refused.json()["error"]["details"][0]["loc"].startswith("body.embedding_"), refused.text
    # Only the keys given change: a budget alone leaves the model, and null puts the server's back.
    await mapi.put("/developer/settings", json=JULEP_SIZE)
    await mapi.put("/developer/settings", json={"default_budget": {"max_model_calls": 5}})
    kept = (await mapi.get("/developer/settings")).json()
    assert kept["embedding_model"] == JULEP_SIZE["embedding_model"] and kept["default_budget"]
    back = await mapi.put("/developer/settings", json={"embedding_model": None, "default_budget": None})
    assert back.json() == {"default_budget": None, "embedding_model": None, "embedding_dimensions": None}


async def test_reembed_moves_a_developers_docs_to_the_size_they_chose(
    mapi, postgres_url, model_server, monkeypatch
):
    agent = await create_agent(mapi)
    owner = f"/agents/{agent['id']}"
    doc = await _doc(mapi, owner, "boats", "boats sail and float on water")
    assert doc["embedding_dimensions"] == 384
    await mapi.put("/developer/settings", json=JULEP_SIZE)
    monkeypatch.setenv("MINT_DATABASE_URL", postgres_url)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", model_server.openai_base_url)
    result = await asyncio.to_thread(CliRunner().invoke, cli, ["docs", "reembed"])
    assert result.exit_code == 0, result.output
    assert "with text-embedding-3-large" in result.output, result.output
    after = (await mapi.get(f"/docs/{doc['id']}")).json()
    assert (after["embedding_model"], after["embedding_dimensions"]) == ("text-embedding-3-large", 1024)
    vector = (await mapi.post("/embed", json={"text": "boats float"})).json()["vectors"][0]
    found = await mapi.post(f"{owner}/search", json={"vector": vector, "confidence": 0})
    assert [d["title"] for d in found.json()["docs"]] == ["boats"]


@pytest.mark.parametrize("size", SUPPORTED_DIMENSIONS)
async def test_each_size_is_searched_through_its_own_hnsw_index(store, postgres_url, size):
    """The query's cast and filter are exactly its partial index's expression and predicate: with sequential
    scans and sorts off, the plan orders by doc_chunks_embedding_<size> (a query the planner could not match
    to it would have to sort)."""
    developer, _ = await store.create_developer(f"size {size}")
    owner = str(uuid.uuid4())
    pool = await connect_pool(postgres_url, max_size=1)
    try:
        docs = DocStore(pool)
        doc = await docs.create(developer, "agent", owner, "one", "text", {}, None)
        await docs.save_embeddings(developer, doc.id, "test", [(0, [1.0] + [0.0] * (size - 1))])
        found = await docs.search(developer, [owner], SearchQuery(vector=[1.0] + [0.0] * (size - 1)))
        assert [d.title for d in found] == ["one"] and found[0].distance == pytest.approx(0, abs=1e-6)
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off")
            sql = "EXPLAIN " + vector_search_sql("NULL", False, size)
            plan = "\n".join(r[0] for r in await conn.fetch(sql, [1.0] * size, developer, [owner], 10))
        assert f"doc_chunks_embedding_{size}" in plan, plan
    finally:
        await pool.close()


async def test_embeddings_of_mixed_or_unknown_sizes_are_refused_by_the_store(store, postgres_url):
    developer, _ = await store.create_developer("mixed sizes")
    pool = await connect_pool(postgres_url, max_size=1)
    try:
        docs = DocStore(pool)
        doc = await docs.create(developer, "agent", str(uuid.uuid4()), "two", ["a", "b"], {}, None)
        with pytest.raises(ValueError, match="each must have one of"):
            await docs.save_embeddings(developer, doc.id, "test", [(0, [1.0] * 384), (1, [1.0] * 1024)])
        with pytest.raises(ValueError, match="each must have one of"):
            await docs.save_embeddings(developer, doc.id, "test", [(0, [1.0] * 100), (1, [1.0] * 100)])
        with pytest.raises(ValueError, match="not 100"):
            vector_search_sql("NULL", False, 100)
    finally:
        await pool.close()


async def test_a_model_of_one_size_is_not_asked_for_dimensions_and_a_wrong_size_fails_the_doc(
    mapi, model_server
):
    """Only OpenAI's text-embedding-3 models take `dimensions`; another model (here the local server's, which
    answers 1536 numbers when not asked) is checked against the size configured."""
    agent = await create_agent(mapi)
    owner = f"/agents/{agent['id']}"
    await mapi.put(
        "/developer/settings", json={"embedding_model": "openai/voyage-3", "embedding_dimensions": 1024}
    )
    wrong = await _doc(mapi, owner, "wrong", "boats float")
    assert wrong["status"] == "failed" and "1536 numbers, not the 1024 configured" in wrong["error"], wrong
    assert "dimensions" not in model_server.embedding_calls[-1]
    await mapi.put(
        "/developer/settings", json={"embedding_model": "openai/voyage-3", "embedding_dimensions": 1536}
    )
    right = await _doc(mapi, owner, "right", "boats float")
    assert (right["status"], right["embedding_model"], right["embedding_dimensions"]) == (
        "indexed",
        "voyage-3",
        1536,
    )


async def test_hostile_vectors_and_settings_get_a_clear_4xx(mapi):
    agent = await create_agent(mapi)
    owner = f"/agents/{agent['id']}"
    for raw, where in (
        ('{"vector": [NaN' + ", 0.0" * 383 + "]}", "vector"),
        ('{"vector": [Infinity' + ", 0.0" * 383 + "]}", "vector"),
        ('{"vector": [1e300' + ", 0.0" * 383 + "]}", "vector"),
        ('{"vector": ["a"' + ", 0.0" * 383 + "]}", "vector"),
        ('{"vector": [' + ", ".join(["0.5"] * 100_000) + "]}", "vector"),
    ):
        response = await mapi.post(
            f"{owner}/search", content=raw, headers={"Content-Type": "application/json"}
        )
        assert 400 <= response.status_code < 500, (raw[:40], response.status_code, response.text[:300])
        assert where in response.text, response.text[:300]
    for body in (
        {"embedding_model": "openai/x\u0000y", "embedding_dimensions": 1024},
        {"embedding_model": "openai/" + "x" * 100_000, "embedding_dimensions": 1024},
        {"embedding_model": "openai/text-embedding-3-small", "embedding_dimensions": 10**30},
        {"embedding_model": ["openai/x"], "embedding_dimensions": 1024},
    ):
        response = await mapi.put("/developer/settings", json=body)
        assert response.status_code == 422, (body, response.text[:300])
    assert (await mapi.get("/developer/settings")).json()["embedding_model"] is None
