"""What a chat reads that does not depend on its session's turn, started at once: the agents that answer
(with each one's cast: users and tools) and the developer's default budget. They are read while the turn
is taken (which may wait for another chat) instead of one after another behind it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import TypeVar

from contracts.json import JsonObject
from contracts.records.agents import Agent
from services.chat.cast import Cast

T = TypeVar("T")


class ReadsAhead:
    def __init__(
        self,
        agent_ids: list[str],
        agent: Callable[[str], Coroutine[None, None, Agent]],
        cast: Callable[[Agent], Awaitable[Cast]],
        default_budget: Coroutine[None, None, JsonObject | None] | None,
    ):
        """`agent(id)` reads an agent (NotFound if it is not the developer's), `cast(agent)` its cast;
        `default_budget` is the developer's (None: the session has its own)."""
        self._agents = {i: _task(agent(i)) for i in dict.fromkeys(agent_ids)}

        async def cast_of(agent_id: str) -> Cast:
            return await cast(await self._agents[agent_id])

        self._casts = {i: _task(cast_of(i)) for i in self._agents}
        self._budget = _task(default_budget) if default_budget is not None else None

    async def agent(self, agent_id: str) -> Agent:
        return await self._agents[agent_id]

    async def cast(self, agent_id: str) -> Cast:
        return await self._casts[agent_id]

    async def default_budget(self) -> JsonObject | None:
        return None if self._budget is None else await self._budget

    async def close(self) -> None:
        """Whatever was not awaited is stopped, and its failure (a chat that ended first) left unreported."""
        tasks = [*self._agents.values(), *self._casts.values(), *([self._budget] if self._budget else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _task(coroutine: Coroutine[None, None, T]) -> asyncio.Task[T]:
    return asyncio.create_task(coroutine)
