"""Per-process limits: request rates per API key (a token bucket), and chats in flight per developer."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from api.errors import ApiError


@dataclass
class RateLimiter:
    """`per_minute` requests per key, in bursts of up to a minute's worth; 0 turns it off. Each API process
    keeps its own buckets, so N processes behind a balancer allow up to N times the rate."""

    per_minute: int
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)  # key -> (tokens, last refill)

    def wait_seconds(self, key: str) -> float:
        """0 when the request may go now (and it is counted), else how long until it may."""
        if self.per_minute <= 0:
            return 0.0
        now = time.monotonic()
        tokens, last = self._buckets.get(key, (float(self.per_minute), now))
        tokens = min(float(self.per_minute), tokens + (now - last) * self.per_minute / 60)
        if tokens < 1:
            self._buckets[key] = (tokens, now)
            return (1 - tokens) * 60 / self.per_minute
        self._buckets[key] = (tokens - 1, now)
        return 0.0


@dataclass
class ChatSlots:
    """At most `per_developer` chats at once per developer in this API process, waiting for a session's turn
    included; 0 turns it off. A chat holds no database connection while it runs (mint/store/chat_turns.py), but it
    holds model calls and tool runs on the worker: this keeps one tenant's flood of chats from taking them
    all. Per process, like the rate limit: N API processes allow N times as many."""

    per_developer: int
    _in_use: dict[str, int] = field(default_factory=dict)

    @contextlib.contextmanager
    def slot(self, developer: str) -> Iterator[None]:
        in_use = self._in_use.get(developer, 0)
        if 0 < self.per_developer <= in_use:
            raise ApiError(
                429,
                f"too many chats at once: a developer may run {self.per_developer} at a time "
                "(MINT_MAX_CHATS_PER_DEVELOPER); retry when one ends",
                headers={"Retry-After": "1"},
            )
        self._in_use[developer] = in_use + 1
        try:
            yield
        finally:
            self._in_use[developer] -= 1
            if not self._in_use[developer]:
                del self._in_use[developer]
