"""Budget bookkeeping in Postgres: reserve a model call before it is made, settle its tokens and cost after.

Why here and not from the usage the transition writer sums (executions.prompt_tokens, ...): those totals
land when a batch of transitions is written, which can be after the next call has started (batches are
written alongside calls), and a fan-out child's transitions reach the row only when the child ends. The
counters here are updated by the call itself, on the execution's row, which the main workflow, its
sub-workflows and its fan-out children all share; the reservation takes the row's lock, so calls running at
once (a map's children, parallel branches) are counted one by one and `max_model_calls` is exact.
"""

from __future__ import annotations

import asyncpg

from contracts.budgets import over_budget
from contracts.json import JsonObject
from contracts.messages import Usage


class OverBudget(Exception):
    """The next model call would pass the budget; the message says which limit."""


class UnknownExecution(Exception):
    """A model call names an execution that does not exist: it cannot be counted, so it is not made."""


class Budgets:
    """Reservations and settlements for executions (the worker) and sessions (the API)."""

    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    # Executions (the call_model activity) ------------------------------------------------------------------

    async def reserve_call(self, execution_id: str, call_key: str) -> bool:
        """Count one more model call of the execution, or raise OverBudget. Idempotent per `call_key` (a
        retried activity is the same call). False when the execution has no budget (nothing to settle);
        UnknownExecution when there is no such execution."""
        async with self.pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(
                "SELECT budget, spent_calls, spent_tokens, spent_cost, "
                "EXISTS (SELECT 1 FROM budget_calls WHERE execution_id = $1 AND call_key = $2) AS reserved "
                # Only a budgeted execution's row is locked (Postgres locks the rows a query returns).
                "FROM executions WHERE id = $1 AND budget IS NOT NULL FOR NO KEY UPDATE",
                execution_id,
                call_key,
            )
            if row is None and not await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM executions WHERE id = $1)", execution_id
            ):
                # Fail closed: a call must be charged to an execution that exists, never to none at all.
                raise UnknownExecution(f"no execution {execution_id} to charge a model call to")
            if row is None or not row["budget"]:
                return False
            if row["reserved"]:
                return True
            refused = over_budget(row["budget"], row["spent_calls"], row["spent_tokens"], row["spent_cost"])
            if refused:
                raise OverBudget(refused)
            await conn.execute(
                "INSERT INTO budget_calls (execution_id, call_key) VALUES ($1, $2);", execution_id, call_key
            )
            await conn.execute(
                "UPDATE executions SET spent_calls = spent_calls + 1 WHERE id = $1", execution_id
            )
            return True

    async def settle_call(self, execution_id: str, call_key: str, tokens: int, cost: float) -> None:
        """Add a reserved call's tokens and cost, once whatever retries."""
        await self.pool.execute(
            """
            WITH settled AS (
                UPDATE budget_calls SET settled = true
                WHERE execution_id = $1 AND call_key = $2 AND NOT settled RETURNING 1
            )
            UPDATE executions SET spent_tokens = spent_tokens + $3, spent_cost = spent_cost + $4
            WHERE id = $1 AND EXISTS (SELECT 1 FROM settled)
            """,
            execution_id,
            call_key,
            tokens,
            cost,
        )

    # Sessions (chat, in the API) ------------------------------------------------------------------------

    async def reserve_session_call(self, session_id: str, default: JsonObject | None) -> None:
        """Count one more model call of the session's chats, or raise OverBudget (the session's budget, else
        `default`, the developer's). One statement, as a chat waits for it before its model call: the call is
        counted, and given back if the counts before it were already at the budget. A session's chats take
        turns (infra/store/chat_turns.py), so no other reservation reads the count in between."""
        row = await self.pool.fetchrow(
            "UPDATE sessions SET spent_calls = spent_calls + 1 WHERE id = $1 "
            "RETURNING budget, spent_calls - 1 AS calls_before, spent_tokens, spent_cost",
            session_id,
        )
        if row is None:
            return
        refused = over_budget(
            row["budget"] or default, row["calls_before"], row["spent_tokens"], row["spent_cost"]
        )
        if refused:
            await self.pool.execute(
                "UPDATE sessions SET spent_calls = spent_calls - 1 WHERE id = $1", session_id
            )
            raise OverBudget(refused)

    async def settle_session_call(self, session_id: str, tokens: int, cost: float) -> None:
        await self.pool.execute(
            "UPDATE sessions SET spent_tokens = spent_tokens + $2, spent_cost = spent_cost + $3 WHERE id = $1",
            session_id,
            tokens,
            cost,
        )

    # Developer settings ---------------------------------------------------------------------------------

    async def default_budget(self, developer_id: str) -> JsonObject | None:
        """The developer's default budget (for executions and sessions that set none)."""
        found: JsonObject | None = await self.pool.fetchval(
            "SELECT default_budget FROM developer_settings WHERE developer_id = $1", developer_id
        )
        return found

    async def set_default_budget(self, developer_id: str, budget: JsonObject | None) -> None:
        await self.pool.execute(
            "INSERT INTO developer_settings (developer_id, default_budget) VALUES ($1, $2) "
            "ON CONFLICT (developer_id) DO UPDATE SET default_budget = $2, updated_at = now()",
            developer_id,
            budget,
        )


def tokens_of(usage: Usage | None) -> int:
    """A call's tokens: prompt plus completion."""
    usage = usage or {}
    return int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
