"""What one chat's model calls spend: each call is counted against the session's budget before it is made
(contracts/budgets.py; refused with OutOfBudget, a 402 of type BudgetExceeded) and its usage added after,
to the session's counters and to the chat answer's `usage`. Every model call a chat makes goes through it:
the agents' answers and tool turns (services/chat/chatter.py) and prompt guardrails' verdicts
(services/chat/guardrails.py).

Neither write waits on the chat's path when it need not: the first call's reservation may be made while the
context is read (`reserve_ahead`), and a call's usage is written while the chat goes on, settled before the
next reservation reads the counters and before the chat ends (`settled`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

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
    _reserved: asyncio.Task[None] | None = field(default=None, init=False)
    _settling: list[asyncio.Task[None]] = field(default_factory=list, init=False)

    def reserve_ahead(self) -> None:
        """Start counting the next model call now (it is about to be made), so that the count overlaps what
        the chat does first; `before_call` then waits for it."""
        if self._reserved is None:
            self._reserved = asyncio.create_task(self._reserve())

    async def before_call(self) -> None:
        """Count one more model call against the session's budget, or refuse it."""
        reserved, self._reserved = self._reserved, None
        await (reserved if reserved is not None else self._reserve())

    async def after_call(self, answer: ModelAnswer) -> None:
        """Record what the call used (its tokens and cost) in the answer now, and on the session meanwhile."""
        self.count(answer)
        settle = self.budgets.settle_session_call(
            self.session_id, tokens_of(answer.usage), float(answer.cost or 0)
        )
        self._settling.append(asyncio.create_task(settle))

    async def settled(self) -> None:
        """Every call's usage is on the session (a failed write fails here)."""
        settling, self._settling = self._settling, []
        await asyncio.gather(*settling)

    async def close(self) -> None:
        """Nothing left running, whatever ended the chat: a reservation made ahead for a call that never
        came is given up (if it was not made yet), and the usage writes finish (their failures, after
        another, are not the chat's to report)."""
        if self._reserved is not None:
            self._reserved.cancel()
            with contextlib.suppress(asyncio.CancelledError, OutOfBudget):
                await self._reserved
            self._reserved = None
        settling, self._settling = self._settling, []
        await asyncio.gather(*settling, return_exceptions=True)

    async def _reserve(self) -> None:
        await self.settled()  # the counters it checks include every call before it
        try:
            await self.budgets.reserve_session_call(self.session_id, self.default_budget)
        except OverBudget as exc:
            raise OutOfBudget(f"session {self.session_id}: {exc}") from None
