"""Per-client token buckets with the IETF RateLimit header fields."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from multidict import istr

MAX_CLIENTS = 100_000
# As aiohttp keeps header names: setting them then skips folding the case.
LIMIT, REMAINING, RESET = (
    istr("RateLimit-Limit"),
    istr("RateLimit-Remaining"),
    istr("RateLimit-Reset"),
)


@lru_cache(maxsize=64)
def _limit_text(limit: int) -> str:
    """A limit as text: a handful of limits are in use, the default and keys' own."""
    return str(limit)


class Decision(NamedTuple):
    """Outcome of one request against its bucket (a tuple: made on every limited request)."""

    allowed: bool
    limit: int
    remaining: int
    reset_s: int  # seconds until the bucket is full again
    retry_after_s: int  # seconds until one request is allowed (0 when allowed)

    def headers(self) -> dict[str, str]:
        """RateLimit-* headers, plus Retry-After when refused."""
        headers = {
            LIMIT: _limit_text(self.limit),
            REMAINING: str(self.remaining),
            RESET: str(self.reset_s),
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.retry_after_s)
        return headers


def decision(allowed: bool, tokens: float, per_minute: int, burst: int) -> Decision:
    """The Decision for a bucket left with `tokens` after the request."""
    rate = per_minute / 60.0
    reset = math.ceil((burst - tokens) / rate) if rate > 0 else 0
    retry = 0 if allowed else max(1, math.ceil((1.0 - tokens) / rate))
    return Decision(allowed, per_minute, int(tokens), reset, retry)


class RateLimiter:
    """In-memory token buckets keyed by client identity (a key, its tokens, or an address): one
    budget per process (see SharedRateLimiter for one across processes and hosts)."""

    shared = False

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._buckets: dict[str, tuple[float, float, float, float]] = {}

    def check(self, identity: str, per_minute: int, burst: int) -> Decision:
        """Take one token from `identity`'s bucket if there is one."""
        now = self._clock()
        rate = per_minute / 60.0
        tokens, last, _, _ = self._buckets.get(identity, (float(burst), now, rate, burst))
        tokens = min(float(burst), tokens + (now - last) * rate)
        allowed = tokens >= 1.0
        if allowed:
            tokens -= 1.0
        if len(self._buckets) >= MAX_CLIENTS and identity not in self._buckets:
            self._evict(now)
        self._buckets[identity] = (tokens, now, rate, burst)
        return decision(allowed, tokens, per_minute, burst)

    def _evict(self, now: float) -> None:
        """Forget buckets that have refilled: they would start full anyway, so no client's
        budget changes. Only if that frees too little, forget the longest idle ones."""
        full = [
            identity
            for identity, (tokens, last, rate, burst) in self._buckets.items()
            if tokens + (now - last) * rate >= burst
        ]
        for identity in full:
            del self._buckets[identity]
        if len(self._buckets) >= MAX_CLIENTS:
            idle = sorted(self._buckets.items(), key=lambda kv: kv[1][1])
            for identity, _ in idle[: len(self._buckets) - MAX_CLIENTS // 2]:
                del self._buckets[identity]
