"""Token buckets kept in Redis, so that every worker and replica spends one budget per client."""

from __future__ import annotations

import logging
import time

from server.security.ratelimit import Decision, decision

log = logging.getLogger("server.ratelimit")
KEY_PREFIX = "weatherapi:ratelimit:"
WARN_EVERY_S = 60.0
# One atomic step of the bucket: refill by the time passed (Redis's clock, the same for every
# replica), take a token if there is one, and let the bucket expire once it would be full.
BUCKET = """
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return {allowed, tostring(tokens)}
"""


class SharedRateLimiter:
    """Buckets in Redis (WEATHERAPI_RATE_LIMIT_REDIS_URL). When Redis cannot be reached the
    request is let through (the service stays up) and a warning is logged once a minute."""

    shared = True

    def __init__(self, url: str):
        import redis.asyncio

        self._redis = redis.asyncio.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
        self._bucket = self._redis.register_script(BUCKET)
        self._warned = -WARN_EVERY_S

    async def check(self, identity: str, per_minute: int, burst: int) -> Decision:
        """Take one token from `identity`'s shared bucket if there is one."""
        from redis.exceptions import RedisError

        try:
            allowed, tokens = await self._bucket(
                keys=[KEY_PREFIX + identity], args=[per_minute / 60.0, burst]
            )
        except (RedisError, OSError) as exc:
            now = time.monotonic()
            if now - self._warned >= WARN_EVERY_S:
                self._warned = now
                log.warning(
                    "rate limit store unreachable (%s); requests are not limited",
                    type(exc).__name__,
                )
            return Decision(True, per_minute, burst, 0, 0)
        return decision(bool(allowed), float(tokens), per_minute, burst)

    async def close(self) -> None:
        """Close the connection pool."""
        await self._redis.aclose()
