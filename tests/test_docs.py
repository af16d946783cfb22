"""Docs and search on the embedded Postgres with pgvector and the local all-MiniLM-L6-v2 embedder."""

from __future__ import annotations

import asyncio
import math
import uuid
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from infra.models.embeddings import MAX_BATCH, EmbeddingChoice, embedder_for
from infra.store.db import HNSW_EF_SEARCH, connect_pool
from infra.store.docs import DEFAULT_DIMENSIONS as DIMENSIONS
from infra.store.docs import DocStore, SearchQuery
from process.cli import cli
from tests.conftest import OPENAI_KEY, temporal_address
from tests.helpers import create_agent, run_task, wait_indexed
from tests.stack import BackgroundStack

# A small labelled set: each query is answered by exactly one doc, mostly in other words than the doc uses.
CORPUS = {
    "refunds": "Refund policy: customers may return unused items within 30 days of delivery for their money back.",
    "shipping": "Orders leave our warehouse within two business days; express delivery arrives overnight.",
    "password": "To reset your password, open account settings, choose security, and follow the emailed link.",
    "warranty": "Every laptop carries a two-year warranty covering manufacturing defects but not accidental damage.",
    "battery": "Battery life lasts up to 14 hours of video playback; charging to 80% takes about an hour.",
    "hours": "Our support team answers phone calls Monday to Friday from 9 am to 6 pm Central European Time.",
    "privacy": "We never sell personal data; analytics are aggregated and you can request deletion at any time.",
    "payment": "We accept Visa, Mastercard, PayPal and bank transfer; invoices are issued in euros.",
    "recycling": "Send old devices back with the prepaid label and we recycle them responsibly for free.",
    "gift": "Gift cards never expire and can be redeemed online or in any of our shops.",
    "student": "Students get fifteen percent off with a valid university email address.",
    "screen": "The display is a 14-inch OLED panel with 120 Hz refresh rate and 500 nits brightness.",
}
QUERIES = {
    "can I get my money back if I do not like it": "refunds",
    "how long until my parcel arrives": "shipping",
    "I forgot my login credentials": "password",
    "what happens if the computer breaks by itself": "warranty",
    "how many hours can I watch films unplugged": "battery",
    "when can I call customer service": "hours",
    "do you share my information with advertisers": "privacy",
    "which credit cards can I use": "payment",
    "what should I do with my old phone": "recycling",
    "is there a discount for university students": "student",
    "how bright is the monitor": "screen",
    "do vouchers lose their value": "gift",
}


async def _doc(api: httpx.AsyncClient, owner: str, title: str, content: Any, **extra: Any) -> dict[str, Any]:
    """Create a doc and return it once indexed. The create waits up to 20 s for its indexing, which is
    usually enough; on a busy machine the first doc (which loads the model) may come back `pending`."""
    response = await api.post(f"{owner}/docs", json={"title": title, "content": content, **extra})
    assert response.status_code == 201, response.text
    doc = response.json()
    return await wait_indexed(api, doc["id"]) if doc["status"] == "pending" else doc


async def _search(api: httpx.AsyncClient, owner: str, **body: Any) -> list[dict[str, Any]]:
    response = await api.post(f"{owner}/search", json=body)
    assert response.status_code == 200, response.text
    return response.json()["docs"]


@pytest.fixture
async def shop(api) -> str:
    """An agent holding the labelled corpus; returns its URL prefix."""
    agent = await create_agent(api, "shop")
    owner = f"/agents/{agent['id']}"
    for title, text in CORPUS.items():
        doc = await _doc(api, owner, title, text, metadata={"topic": title, "shop": "eu"})
        assert doc["status"] == "indexed", doc
    return owner


async def test_docs_are_created_embedded_listed_and_fetched(api):
    user = (await api.post("/users", json={"name": "ada"})).json()
    owner = f"/users/{user['id']}"
    doc = await _doc(
        api, owner, "notes", ["first part about cats", "second part about dogs"], metadata={"k": 1}
    )
    assert doc["status"] == "indexed"
    assert (doc["embedding_model"], doc["embedding_dimensions"]) == ("all-MiniLM-L6-v2", 384)
    assert (await api.get(f"/docs/{doc['id']}")).json()["content"] == [
        "first part about cats",
        "second part about dogs",
    ]
    listed = (await api.get(f"{owner}/docs", params={"include_embeddings": "true"})).json()["items"]
    assert [d["id"] for d in listed] == [doc["id"]]
    vectors = listed[0]["embeddings"]
    assert len(vectors) == 2 and all(len(v) == 384 for v in vectors)
    assert math.isclose(sum(x * x for x in vectors[0]), 1.0, rel_tol=1e-4)  # unit vectors


async def test_a_long_doc_is_chunked_and_its_middle_is_found(api):
    agent = await create_agent(api)
    owner = f"/agents/{agent['id']}"
    filler = " ".join(f"word{i}" for i in range(400))
    await _doc(api, owner, "long", f"{filler} the secret ingredient is cardamom {filler}")
    (hit,) = await _search(api, owner, text="secret ingredient", limit=1)
    assert "cardamom" in hit["snippet"]["content"] and hit["snippet"]["index"] > 0


async def test_text_vector_and_hybrid_search_find_the_right_doc(api, shop):
    (text,) = await _search(api, shop, text="warranty laptop", limit=1)
    assert text["title"] == "warranty"
    vector = (await api.post("/embed", json={"text": "my parcel is late"})).json()["vectors"][0]
    assert len(vector) == 384
    by_vector = await _search(api, shop, vector=vector, limit=3, confidence=0)
    assert by_vector[0]["title"] == "shipping"
    assert by_vector[0]["distance"] < by_vector[1]["distance"]
    julep_default = await _search(api, shop, vector=vector, limit=3)  # confidence 0.5, as on Julep
    assert [d["id"] for d in julep_default] == [d["id"] for d in by_vector if d["distance"] <= 0.5]
    assert len(julep_default) < len(by_vector)
    hybrid = await _search(api, shop, text="parcel late", vector=vector, limit=3, confidence=0)
    assert hybrid[0]["title"] == "shipping"
    embedded_by_mint = await _search(
        api, shop, text="my parcel is late", mode="vector", limit=1, confidence=0
    )
    assert embedded_by_mint[0]["id"] == by_vector[0]["id"]
    first = hybrid[0]
    assert first["owner"]["role"] == "agent" and first["metadata"]["topic"] == "shipping"
    assert set(first["snippet"]) == {"index", "content", "embedding"}  # include_embeddings: true, as on Julep
    assert len(first["snippet"]["embedding"]) == 384
    lean = await _search(api, shop, text="warranty laptop", limit=1, include_embeddings=False)
    assert set(lean[0]["snippet"]) == {"index", "content"}


async def test_metadata_filters_and_confidence_cut_results(api, shop):
    only = await _search(api, shop, text="delivery", mode="hybrid", metadata_filter={"topic": "refunds"})
    assert [d["title"] for d in only] == ["refunds"]
    assert await _search(api, shop, text="delivery", metadata_filter={"shop": "us"}) == []
    strict = await _search(api, shop, text="how long until my parcel arrives", mode="vector", confidence=0.99)
    assert strict == []


async def test_mmr_trades_relevance_for_variety(api):
    agent = await create_agent(api)
    owner = f"/agents/{agent['id']}"
    for i, text in enumerate(
        [
            "The cat sat on the warm windowsill in the sun.",
            "A cat was sitting on the sunny windowsill, warm.",
            "On the warm sunny windowsill the cat sat.",
            "Dogs love to chase balls in the park.",
        ]
    ):
        await _doc(api, owner, f"d{i}", text)
    plain = [
        d["title"]
        for d in await _search(
            api, owner, text="cat on a warm windowsill", mode="vector", limit=2, confidence=0, mmr_strength=0
        )
    ]
    varied = await _search(
        api, owner, text="cat on a warm windowsill", mode="vector", limit=2, mmr_strength=0.9, confidence=0
    )
    assert "d3" not in plain
    assert "d3" in [d["title"] for d in varied]  # the near-duplicates give way to something different
    julep_default = await _search(
        api, owner, text="cat on a warm windowsill", mode="vector", limit=2, confidence=0
    )
    assert "d3" in [d["title"] for d in julep_default]  # mmr_strength is 0.5 by default, as on Julep


async def test_docs_are_deleted_one_by_one_by_metadata_and_with_their_owner(api, shop):
    listed = (await api.get(f"{shop}/docs", params={"limit": 100})).json()["items"]
    gift = next(d for d in listed if d["title"] == "gift")
    assert (await api.delete(f"{shop}/docs/{gift['id']}")).status_code == 202
    assert (await api.get(f"/docs/{gift['id']}")).status_code == 404
    deleted = await api.request("DELETE", f"{shop}/docs", json={"metadata_filter": {"topic": "payment"}})
    assert deleted.status_code == 202 and len(deleted.json()["items"]) == 1  # Julep's list shape
    # Neither a filter nor delete_all (or an empty filter): nothing deleted, as on Julep.
    for body in ({}, {"metadata_filter": {}}):
        none = await api.request("DELETE", f"{shop}/docs", json=body)
        assert none.status_code == 202 and none.json() == {"items": []}, none.text
    assert len((await api.get(f"{shop}/docs", params={"limit": 100})).json()["items"]) == len(listed) - 2
    bare = await api.get(f"{shop}/docs?metadata_filter=&limit=100")  # a bare filter: none, as on Julep
    assert bare.status_code == 200 and len(bare.json()["items"]) == len(listed) - 2, bare.text
    titles = {d["title"] for d in await _search(api, shop, text="cards gift payment visa", limit=20)}
    assert "gift" not in titles and "payment" not in titles
    await api.delete(shop)
    assert (await api.get(f"/docs/{listed[0]['id']}")).status_code == 404


async def test_another_developers_docs_never_show(api, shop, store, stack):
    _, key = await store.create_developer("other")
    async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}) as other:
        assert (await other.post(f"{shop}/search", json={"text": "refund"})).status_code == 404
        assert (await other.get(f"{shop}/docs")).status_code == 404
        listed = (await api.get(f"{shop}/docs")).json()["items"]
        assert (await other.get(f"/docs/{listed[0]['id']}")).status_code == 404
        own = (await other.post("/agents", json={"name": "mine"})).json()
        await other.post(
            f"/agents/{own['id']}/docs", json={"title": "x", "content": "refund rules of another shop"}
        )
        found = (
            await other.post(f"/agents/{own['id']}/search", json={"text": "refund", "mode": "hybrid"})
        ).json()
        assert [d["title"] for d in found["docs"]] == ["x"]


async def test_local_embeddings_and_hybrid_search_beat_text_search_on_the_labelled_set(api, shop):
    def top3_hits(mode: str) -> Any:
        async def run() -> int:
            hits = 0
            for query, answer in QUERIES.items():
                found = await _search(api, shop, text=query, mode=mode, limit=3, confidence=0)
                hits += answer in [d["title"] for d in found]
            return hits

        return run()

    text, vector, hybrid = await top3_hits("text"), await top3_hits("vector"), await top3_hits("hybrid")
    print(f"top-3 hits out of {len(QUERIES)}: text {text}, vector {vector}, hybrid {hybrid}")
    assert hybrid >= 0.75 * len(QUERIES)
    assert vector >= 0.75 * len(QUERIES)
    assert hybrid > text


@pytest.mark.parametrize(
    "step",
    [
        {"search": {"query": "$ _['question']", "limit": 2}},  # the $ dialect
        {"search": {"query": '_["question"]', "limit": 2}},  # the seed dialect
    ],
)
async def test_the_search_step_searches_the_tasks_agent(api, step):
    agent = await create_agent(api)
    owner = f"/agents/{agent['id']}"
    for title, text in list(CORPUS.items())[:6]:
        await _doc(api, owner, title, text)
    task = {"name": "ask", "main": [step, {"evaluate": {"titles": "[d['title'] for d in _['docs']]"}}]}
    if step["search"]["query"].startswith("$"):
        task["main"][1] = {"evaluate": {"titles": "$ [d['title'] for d in _['docs']]"}}
    execution, _ = await run_task(
        api, task, {"question": "I forgot my login credentials"}, agent_id=agent["id"]
    )
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"]["titles"][0] == "password"


async def test_the_search_step_can_add_a_users_docs(api):
    agent = await create_agent(api)
    user = (await api.post("/users", json={"name": "u"})).json()
    await _doc(api, f"/users/{user['id']}", "allergy", "The user is allergic to peanuts.")
    task = {
        "name": "recall",
        "main": [
            {"search": {"query": "$ 'what food should be avoided'", "user": "$ _['user']", "mode": "vector"}}
        ],
    }
    execution, _ = await run_task(api, task, {"user": user["id"]}, agent_id=agent["id"])
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"]["docs"][0]["title"] == "allergy"


async def test_bad_search_requests_are_4xx(api, shop):
    assert (await api.post(f"{shop}/search", json={"vector": [0.1, 0.2]})).status_code == 422
    assert (await api.post(f"{shop}/search", json={"mode": "vector"})).status_code == 422
    assert (await api.post(f"{shop}/search", json={"text": "x", "limit": 0})).status_code == 422
    assert (await api.post("/sessions/nope/search", json={"text": "x"})).status_code == 404


async def test_reembed_redoes_docs_from_another_model_with_progress(api, store, postgres_url, monkeypatch):
    agent = await create_agent(api)
    doc = await _doc(api, f"/agents/{agent['id']}", "old", "embedded by an older model")
    before = (await api.get(f"/agents/{agent['id']}/docs", params={"include_embeddings": "true"})).json()
    await store.pool.execute("UPDATE docs SET embedding_model = 'old-model' WHERE id = $1", doc["id"])
    await store.pool.execute(
        "UPDATE doc_chunks SET embedding = NULL, dimensions = NULL WHERE doc_id = $1", doc["id"]
    )
    monkeypatch.setenv("MINT_DATABASE_URL", postgres_url)
    result = await asyncio.to_thread(CliRunner().invoke, cli, ["docs", "reembed"])
    assert result.exit_code == 0, result.output
    assert "docs of developer" in result.output and "to embed with all-MiniLM-L6-v2" in result.output
    assert "re-embedded 1 docs" in result.output
    after = (await api.get(f"/docs/{doc['id']}")).json()
    assert after["embedding_model"] == "all-MiniLM-L6-v2" and after["status"] == "indexed"
    vectors = (await api.get(f"/agents/{agent['id']}/docs", params={"include_embeddings": "true"})).json()
    assert vectors["items"][0]["embeddings"][0] == pytest.approx(
        before["items"][0]["embeddings"][0], abs=1e-5
    )


async def test_import_stores_docs_in_order_and_indexes_them_all(api):
    agent = await create_agent(api, "importer")
    owner = f"/agents/{agent['id']}"
    docs = [{"title": f"doc {i}", "content": f"number {i} of the import"} for i in range(20)]
    response = await api.post(f"{owner}/docs/import", json={"docs": docs})
    assert response.status_code == 201, response.text
    items = response.json()["items"]
    assert [d["title"] for d in items] == [d["title"] for d in docs]
    assert {(await wait_indexed(api, d["id"]))["status"] for d in items} == {"indexed"}


async def test_an_import_with_text_postgres_cannot_store_is_refused_whole(api):
    """Checked before anything is stored (it used to stop the import half way, at the database)."""
    agent = await create_agent(api, "importer")
    owner = f"/agents/{agent['id']}"
    docs = [{"title": "fine", "content": "a good doc"}, {"title": "bad\u0000", "content": "x"}]
    response = await api.post(f"{owner}/docs/import", json={"docs": docs})
    assert response.status_code == 422, response.text
    assert [p["loc"] for p in response.json()["error"]["details"]] == ["body.docs[1].title"]
    assert (await api.get(f"{owner}/docs")).json()["items"] == []


async def test_openai_embeddings_go_through_the_sdk_in_batches_of_384_dimensions(model_server):
    choice = EmbeddingChoice("openai/text-embedding-3-small", DIMENSIONS)
    embedder = embedder_for(choice, OPENAI_KEY, model_server.openai_base_url)
    model_server.embedding_calls.clear()
    vectors = await embedder.embed([f"note {i} about cats" for i in range(70)], "represent the note")
    assert len(vectors) == 70 and {len(v) for v in vectors} == {DIMENSIONS}
    assert [len(call["input"]) for call in model_server.embedding_calls] == [MAX_BATCH, 70 - MAX_BATCH]
    for call in model_server.embedding_calls:
        assert call["model"] == "text-embedding-3-small" and call["dimensions"] == DIMENSIONS
        assert call["input"][0].startswith("represent the note")


async def test_a_stack_on_openai_embeddings_indexes_and_finds_docs(
    postgres_url, temporal_env, store, model_server
):
    async with BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue=f"openai-embeddings-{uuid.uuid4()}",
        embedding_model="openai/text-embedding-3-small",
        openai_api_key=OPENAI_KEY,
        openai_base_url=model_server.openai_base_url,
    ) as stack:
        _, key = await store.create_developer("embeds with openai")
        async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}) as api:
            agent = await create_agent(api)
            for title, content in (("cats", "cats purr and nap"), ("boats", "boats sail and float")):
                created = await api.post(
                    f"/agents/{agent['id']}/docs", json={"title": title, "content": content}
                )
                assert created.json()["status"] == "indexed", created.text
            found = await _search(api, f"/agents/{agent['id']}", text="why do boats float", mode="vector")
            assert found[0]["title"] == "boats"


async def test_a_search_for_more_candidates_than_ef_search_raises_it_for_itself_only(store, postgres_url):
    """limit 30 asks for 120 candidates, more than the ef_search every connection starts with: the search
    raises it for its own transaction only (SET LOCAL): the pool does not reset session settings."""
    developer, _ = await store.create_developer("ef-search")
    owner = str(uuid.uuid4())
    pool = await connect_pool(postgres_url, max_size=1)  # one connection: the next query gets the same one
    try:
        docs = DocStore(pool)
        for i in range(40):
            doc = await docs.create(developer, "agent", owner, f"doc {i}", f"text {i}", {}, None)
            vector = [1.0, i / 40] + [0.0] * (DIMENSIONS - 2)  # further from [1, 0, ...] as i grows
            await docs.save_embeddings(developer, doc.id, "test", [(0, vector)])
        query = SearchQuery(vector=[1.0] + [0.0] * (DIMENSIONS - 1), limit=30)
        found = await docs.search(developer, [owner], query)
        assert [d.title for d in found] == [f"doc {i}" for i in range(30)]
        assert await pool.fetchval("SHOW hnsw.ef_search") == str(HNSW_EF_SEARCH)
    finally:
        await pool.close()
