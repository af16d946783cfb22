"""The live text of prompt steps that stream (migration 0024): the worker publishes each model call's text so
far, and the transition stream of its execution reads it (services/executions/feeds.py).

Each publish is one statement: the upsert of the call's row and a notification on `mint_executions` with the
execution's id (migration 0015's channel), which Postgres delivers when the row is visible, so the streams
watching the execution wake and read it. Rows are small (one per call in flight) and swept once they are
finished or abandoned; the transitions, not these rows, are the record.
"""

from __future__ import annotations

import asyncpg

from contracts.records.live_text import LiveText
from infra.store.execution_events import CHANNEL

# A finished call's row stays this long (a reader that woke late still sends its tail), an abandoned one
# (its worker was lost and nobody ran it again) this long after its last text.
DONE_SECONDS = 60
ABANDONED_SECONDS = 3600

PUBLISH = f"""
WITH written AS (
    INSERT INTO step_streams (execution_id, call_key, step, run, attempt, text, done)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (execution_id, call_key) DO UPDATE SET
        step = EXCLUDED.step, run = EXCLUDED.run, attempt = EXCLUDED.attempt, text = EXCLUDED.text,
        done = EXCLUDED.done, updated_at = now()
    RETURNING execution_id
)
SELECT pg_notify('{CHANNEL}', execution_id::text) FROM written
"""


class StepStreams:
    """Writes (the worker's call_model) and reads (an execution's stream) of live step text."""

    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    async def publish(
        self, execution_id: str, key: str, step: str, run: str, attempt: int, text: str, done: bool
    ) -> None:
        """Set the call's text so far (all of it: a write lost or repeated changes nothing) and wake the
        execution's streams."""
        await self.pool.execute(PUBLISH, execution_id, key, step, run, attempt, text, done)

    async def sweep(self) -> None:
        """Drop the rows of calls finished a while ago, and of calls abandoned mid-text."""
        await self.pool.execute(
            "DELETE FROM step_streams WHERE updated_at < now() - make_interval(secs => $1) "
            "OR (done AND updated_at < now() - make_interval(secs => $2))",
            float(ABANDONED_SECONDS),
            float(DONE_SECONDS),
        )

    async def live(self, developer_id: str, execution_id: str) -> list[LiveText]:
        """The live text of the developer's execution, oldest call first; once the execution has ended, only
        finished calls (a call its worker abandoned never finishes its row)."""
        rows = await self.pool.fetch(
            """
            SELECT s.call_key, s.step, s.run::text AS run, s.text, s.done FROM step_streams s
            JOIN executions e ON e.id = s.execution_id
            WHERE e.developer_id = $1 AND e.id = $2
              AND (s.done OR e.status NOT IN ('succeeded', 'failed', 'cancelled'))
            ORDER BY s.updated_at
            """,
            developer_id,
            execution_id,
        )
        return [LiveText(r["call_key"], r["step"], r["run"], r["text"], r["done"]) for r in rows]
