"""What one chat's model calls spend: each call is counted against the session's budget before it is made
(contracts/budgets.py; refused with OutOfBudget, a 402 of type BudgetExceeded) and its usage added after,
to the session's counters and to the chat answer's `usage`. Every model call a chat makes goes through it:
the agents' answers and tool turns (services/chat/chatter.py) and prompt guardrails' verdicts
(services/chat/guardrails.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from contracts.calls import ModelAnswer
from contracts.json import JsonObject
from infra.store.budgets import Budgets, OverBudget, tokens_of
from services.errors import OutOfBudget


@dataclass
class ChatSpending:
    budgets: Budgets
    session_id: str
    default_budget: JsonObject | None  # the developer's, for a session that sets none
    count: Callable[[ModelAnswer], None]  # adds a call's usage to the chat's answer

    async def before_call(self) -> None:
        """Count one more model call against the session's budget, or refuse it."""
        try:
            await self.budgets.reserve_session_call(self.session_id, self.default_budget)
        except OverBudget as exc:
            raise OutOfBudget(f"session {self.session_id}: {exc}") from None

    async def after_call(self, answer: ModelAnswer) -> None:
        """Record what the call used (its tokens and cost) on the session and in the answer."""
        await self.budgets.settle_session_call(
            self.session_id, tokens_of(answer.usage), float(answer.cost or 0)
        )
        self.count(answer)
