"""Compressing a session's context: older messages become part of its running summary."""

from __future__ import annotations

import json

from temporalio import activity

from activities.heartbeat import heartbeating
from contracts.background import Compressed, SessionRef
from contracts.temporal import COMPRESS_SESSION
from mint.models.client import ModelClient
from mint.store.tables import AGENTS, SESSIONS, Store

KEEP_RECENT = 4  # the newest messages always stay as they are
COMPRESS_INSTRUCTIONS = (
    "You compress conversations. Merge the previous summary and the messages below into one new summary. "
    "First list the key entities and facts (names, numbers, preferences, decisions, open questions), then "
    "summarise what was discussed. Drop small talk and repetition. Answer with the summary only."
)


class SessionActivities:
    def __init__(self, store: Store, models: ModelClient):
        self.store = store
        self.models = models

    @activity.defn(name=COMPRESS_SESSION)
    async def compress_session(self, request: SessionRef) -> Compressed:
        """Fold every message but the newest few into the summary, in one transaction at the end (a retry
        after a crash starts over from the same messages)."""
        async with heartbeating():
            developer, session_id = request.developer_id, request.session_id
            session = await self.store.get(SESSIONS, developer, session_id)
            if session is None:
                return Compressed(folded=0)
            rows = await self.store.pool.fetch(
                "SELECT id, role, name, content FROM entries WHERE developer_id = $1 AND session_id = $2 "
                "AND NOT summarized ORDER BY seq",
                developer,
                session_id,
            )
            older = rows[:-KEEP_RECENT]
            if not older:
                return Compressed(folded=0)
            agent = await self.store.get(AGENTS, developer, session["agents"][0]) or {}
            conversation = "\n".join(
                f"{r['role']}{' (' + r['name'] + ')' if r['name'] else ''}: "
                f"{r['content'] if isinstance(r['content'], str) else json.dumps(r['content'])}"
                for r in older
            )
            answer = await self.models.complete(
                {
                    "model": agent.get("model"),
                    "messages": [
                        {"role": "system", "content": COMPRESS_INSTRUCTIONS},
                        {
                            "role": "user",
                            "content": f"Previous summary:\n{session['summary'] or '(none)'}\n\nMessages:\n{conversation}",
                        },
                    ],
                    "settings": {"max_tokens": max(128, (session["token_budget"] or 4000) // 4)},
                    "at": f"session-summary:{session_id}",
                }
            )
            summary = answer["response"]["choices"][0]["message"].get("content") or session["summary"]
            async with self.store.pool.acquire() as conn, conn.transaction():
                await conn.execute(
                    "UPDATE sessions SET summary = $3, updated_at = now() WHERE developer_id = $1 AND id = $2",
                    developer,
                    session_id,
                    summary,
                )
                await conn.execute(
                    "UPDATE entries SET summarized = true WHERE developer_id = $1 AND id = ANY($2::uuid[])",
                    developer,
                    [r["id"] for r in older],
                )
            return Compressed(folded=len(older))
