"""A session's history in Postgres (infra/store/session_history.py): appends keep their order, and what a
chat reads through the history cache is exactly what is live, whatever was appended, replaced or cleared."""

from contracts.messages import Message
from infra.store.session_history import APPEND_ROWS, SessionHistory
from infra.store.tables import AGENTS, SESSIONS
from services.tenancy import acting_for


async def _session(store, name: str) -> tuple[str, str]:
    developer, _ = await store.create_developer(name)
    with acting_for(developer):
        agent = await store.insert(AGENTS, developer, {"name": "a"})
        session = await store.insert(SESSIONS, developer, {"agents": [agent.id], "users": []})
    return developer, session.id


def _said(*texts: str) -> list[tuple[Message, str, int]]:
    return [(Message(role="user", content=text), "api_request", 1) for text in texts]


def _texts(entries) -> list[str]:
    return [e.message["content"] for e in entries]


async def test_an_append_longer_than_one_insert_keeps_its_order_and_is_read_whole(store):
    developer, session = await _session(store, "history-long")
    texts = [f"m{i}" for i in range(APPEND_ROWS + 5)]
    history = SessionHistory(store.pool)
    with acting_for(developer):
        await history.append(developer, session, _said(*texts))
        assert _texts((await history.unsummarized(developer, session))[1]) == texts
        assert _texts(await history.entries(developer, session)) == texts


async def test_reads_through_the_cache_see_appends_replacements_and_clears(store):
    developer, session = await _session(store, "history-cache")
    history, fresh = SessionHistory(store.pool), SessionHistory(store.pool)  # fresh: a cache never filled
    with acting_for(developer):
        await history.append(developer, session, _said("a", "b", "c"))
        assert _texts((await history.unsummarized(developer, session))[1]) == ["a", "b", "c"]
        await history.append(developer, session, _said("d"))
        ids = [e.id for e in (await history.unsummarized(developer, session))[1]]
        # A compression replaces a and b with one summary, where a sat.
        first = (await history.entries(developer, session))[0]
        assert await history.replace(
            developer, session, ids[:2], [(Message(role="system", content="s"), 1, first.order)]
        )
        for reader in (history, fresh):
            assert _texts((await reader.unsummarized(developer, session))[1]) == ["s", "c", "d"]
        await history.clear(developer, session)
        await history.append(developer, session, _said("e"))
        for reader in (history, fresh):
            assert _texts((await reader.unsummarized(developer, session))[1]) == ["e"]
