"""One request-rate limiter for the whole application, shared by every ingress replica.

A named Ray actor holds a token bucket per API key (by its SHA-256, never the key): each key may make
`rate` requests per second, in bursts of up to one second's worth. Limits per replica would multiply the
allowed rate by the number of replicas; one shared actor does not. A replica leases tokens in lots of a tenth of
a second's worth (`lease`; serve_app/common/request_leases.py), so a request of a key with a rate under 20 a
second costs one actor call, and a key with a high rate one call per lot.

It also counts each key's open live sessions (WebSockets), for the same reason. An ingress replica that
dies with sessions open leaves them counted until the actor restarts.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ray.actor import ActorProxy

from deployments.config import StorageConfig
from deployments.storage.actors import get_or_create


@dataclass
class TokenBucket:
    rate: float
    tokens: float
    updated: float

    def take(self, now: float, most: int = 1) -> tuple[int, float]:
        """Take up to `most` whole tokens: how many were taken, and when none was, the seconds until one is."""
        self.tokens = min(self.rate, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1:
            taken = min(most, int(self.tokens))
            self.tokens -= taken
            return taken, 0.0
        return 0, (1 - self.tokens) / self.rate


class RequestRateLimiter:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.buckets: dict[str, TokenBucket] = {}
        self.live_sessions: dict[str, int] = {}

    def acquire(self, owner: str, rate: float) -> float:
        """0.0 if `owner` may make a request now; otherwise how many seconds to wait (for Retry-After)."""
        return self.lease(owner, rate, 1)[1]

    def lease(self, owner: str, rate: float, most: int) -> tuple[int, float]:
        """Up to `most` of `owner`'s requests at once: how many it may make now, and when none, how many seconds
        to wait (for Retry-After)."""
        now = self.clock()
        bucket = self.buckets.get(owner)
        if bucket is None or bucket.rate != rate:
            bucket = self.buckets[owner] = TokenBucket(rate=rate, tokens=rate, updated=now)
        return bucket.take(now, most)

    def open_session(self, owner: str, limit: int) -> bool:
        """Count one more live session for `owner`, unless it has `limit` open already."""
        if self.live_sessions.get(owner, 0) >= limit:
            return False
        self.live_sessions[owner] = self.live_sessions.get(owner, 0) + 1
        return True

    def close_session(self, owner: str) -> None:
        self.live_sessions[owner] = max(0, self.live_sessions.get(owner, 0) - 1)


def get_or_create_rate_limiter(storage: StorageConfig) -> ActorProxy[Any]:
    """The application's limiter, created by the first ingress replica and found by the others."""
    return get_or_create(RequestRateLimiter, "RequestRateLimiter", storage)
