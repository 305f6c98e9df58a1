"""How often and how soon to ask again: per-host token buckets, backoff, Retry-After."""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import random
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class RateLimit:
    """At most `per_minute` requests a minute to one host, after a burst of `burst`."""

    per_minute: float
    burst: int = 1


class TokenBucket:
    """One host's budget; waiters are served in arrival order (the lock queues them)."""

    def __init__(self, limit: RateLimit, clock=time.monotonic):
        self.rate = limit.per_minute / 60.0
        self.capacity = float(max(1, limit.burst))
        self.tokens = self.capacity
        self.clock = clock
        self.updated = clock()
        self._lock = asyncio.Lock()

    async def take(self) -> None:
        """Wait until a request may be sent, and spend its token."""
        async with self._lock:
            while True:
                now = self.clock()
                self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
                self.updated = now
                if self.tokens >= 1.0:
                    self.tokens -= 1.0
                    return
                await asyncio.sleep((1.0 - self.tokens) / self.rate)


class HostLimits:
    """The token buckets of the hosts that have a limit (others are not paced)."""

    def __init__(self, limits: dict[str, RateLimit]):
        self._limits = dict(limits)
        self._buckets: dict[str, TokenBucket] = {}

    async def take(self, host: str) -> None:
        """Wait for `host`'s next token ("host" or "host:port", as configured)."""
        limit = self._limits.get(host)
        if limit is None:
            return
        bucket = self._buckets.get(host)
        if bucket is None:  # created inside the running loop (asyncio.Lock binds to it)
            bucket = self._buckets[host] = TokenBucket(limit)
        await bucket.take()


def backoff_s(attempt: int, base_s: float, cap_s: float) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2**attempt)]."""
    # Full jitter spreads clients that failed together (one upstream outage) over the window.
    return random.uniform(0.0, min(cap_s, base_s * (2**attempt)))


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds a Retry-After header asks for (delta-seconds or an HTTP date); None if absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # HTTP dates are GMT; a zone-less one is taken as such
        when = when.replace(tzinfo=dt.timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
