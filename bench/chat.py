"""Chat overhead without the model: context assembly, token counting and truncation for a long history.

Run: python -m bench.chat   (starts its own embedded Postgres)
A session with a 200-message history and a token budget that forces truncation: p50/p95 of preparing one
chat (loading the session's history, rendering the default system template, counting the new message and
truncating to the budget), of counting all 200 messages' tokens from scratch, and, as the floor, of one
Postgres query returning the same history rows. Target: preparation p50 under 15 ms.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from api import schemas
from infra.store.db import connect_pool, migrate
from infra.store.tables import AGENTS, SESSIONS, USERS, Store
from process import local_services
from services.chat.chatter import Chatter
from services.chat.context import count_tokens
from services.chat.session import ChatSession
from services.chat.slots import ChatSlots

RUNS, HISTORY = 200, 200


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


async def _timed(make: Any) -> list[float]:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        await make()
        times.append((time.perf_counter() - start) * 1000)
    return times


async def main() -> None:
    server = local_services.start_postgres(
        Path(tempfile.mkdtemp(prefix="mint-bench-chat-")), cleanup_mode="delete"
    )
    pool = await connect_pool(local_services.postgres_url(server), max_size=4)
    try:
        await migrate(pool)
        store = Store(pool)
        developer, _ = await store.create_developer("bench")
        agent = await store.insert(
            AGENTS,
            developer,
            {"name": "Jessica", "about": "a tutor", "instructions": ["Be brief"], "model": "x"},
        )
        user = await store.insert(
            USERS, developer, {"name": "Ada", "about": "a mathematician", "metadata": {}}
        )
        session = await store.insert(
            SESSIONS,
            developer,
            {
                "agents": [agent.id],
                "users": [user.id],
                "token_budget": 4000,
                "context_overflow": "truncate",
            },
        )
        messages = [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"message {i}: " + "some words here " * 12,
            }
            for i in range(HISTORY)
        ]
        await pool.executemany(
            "INSERT INTO entries (id, session_id, developer_id, role, content, token_count, source) "
            "VALUES ($1, $2, $3, $4, $5, $6, 'api_request')",
            [
                (uuid.uuid4(), session.id, developer, m["role"], m["content"], count_tokens(m))
                for m in messages
            ],
        )
        chatter = Chatter(store, None, None, None, None, "", ChatSlots(0))  # type: ignore[arg-type]  # no model, no recall
        chat_session, chat_agent = ChatSession.of(session), agent
        body = schemas.Chat(messages=[{"role": "user", "content": "and what next?"}], recall=False)
        cast = await chatter.cast(developer, chat_session, chat_agent, body)
        context, _ = await chatter.prepare(developer, chat_session, body, cast)
        assert context.dropped > 0  # the budget forces truncation

        async def prepare_turn() -> None:  # what one chat does before calling the model
            await chatter.prepare(
                developer, chat_session, body, await chatter.cast(developer, chat_session, chat_agent, body)
            )

        prepare = await _timed(prepare_turn)

        async def count_all() -> None:
            for m in messages:
                count_tokens(m)

        counting = await _timed(count_all)
        floor = await _timed(
            lambda: pool.fetch(
                "SELECT role, content, token_count FROM entries WHERE session_id = $1 ORDER BY seq",
                session.id,
            )
        )
    finally:
        await pool.close()
        server.cleanup()
    print(f"one chat's context for a {HISTORY}-message history (truncated to 4,000 tokens), {RUNS} runs:")
    for name, values in (
        ("prepare (assemble, count, truncate)", prepare),
        ("count 200 messages' tokens", counting),
        ("postgres floor: fetch the history", floor),
    ):
        p50, p95 = _percentiles(values)
        print(f"  {name:38s} p50 {p50:6.2f} ms   p95 {p95:6.2f} ms")
    print("  (target: prepare p50 under 15 ms)")


if __name__ == "__main__":
    asyncio.run(main())
