"""Chats in flight per developer, in this API process."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from services.errors import TooMany


@dataclass
class ChatSlots:
    """At most `per_developer` chats at once per developer in this API process, waiting for a session's turn
    included; 0 turns it off. A chat holds no database connection while it runs (infra/store/chat_turns.py), but it
    holds model calls and tool runs on the worker: this keeps one tenant's flood of chats from taking them
    all. Per process, like the API's rate limit: N API processes allow N times as many."""

    per_developer: int
    _in_use: dict[str, int] = field(default_factory=dict)

    @contextlib.contextmanager
    def slot(self, developer: str) -> Iterator[None]:
        in_use = self._in_use.get(developer, 0)
        if 0 < self.per_developer <= in_use:
            raise TooMany(
                f"too many chats at once: a developer may run {self.per_developer} at a time "
                "(MINT_MAX_CHATS_PER_DEVELOPER); retry when one ends",
                retry_after=1,
            )
        self._in_use[developer] = in_use + 1
        try:
            yield
        finally:
            self._in_use[developer] -= 1
            if not self._in_use[developer]:
                del self._in_use[developer]
