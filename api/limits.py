"""Per-process limits: request rates per API key (a token bucket). Chats in flight per developer are the chat
service's (services/chat/slots.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


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
