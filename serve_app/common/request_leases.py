"""A replica's share of each key's request rate, leased from the application's limiter in lots.

Every API request takes one token of its key's rate from `RequestRateLimiter`, one actor for all replicas. An
actor call per request was a third of a poll's work in the ingress under 32 polling clients (issue 63), so a
replica leases a lot of a tenth of a second's worth of the key's rate at once and takes the next requests from
it; what it has not used after that tenth of a second lapses. A key under 20 requests a second leases one token
at a time, one actor call per request, as before; a key with a high rate costs an actor call per lot, and its
replicas together still never exceed its rate (a lot lapses rather than being spent later).
"""

import time
from collections.abc import Callable
from typing import Any

from ray.actor import ActorProxy

LEASE_S = 0.1
"""A lot is this long's worth of a key's rate, and lapses after it."""


class RequestLeases:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._held: dict[str, tuple[int, float]] = {}  # owner -> tokens left, and until when

    async def take(self, limiter: ActorProxy[Any], owner: str, rate: float) -> float:
        """One of `owner`'s requests: 0.0 when it may be made now, else the seconds to wait (for Retry-After)."""
        left, until = self._held.get(owner, (0, 0.0))
        if left > 0 and self.clock() < until:
            self._held[owner] = (left - 1, until)
            return 0.0
        lot = max(1, int(rate * LEASE_S))
        granted, wait_s = await limiter.lease.remote(owner, rate, lot)
        if granted == 0:
            return float(wait_s)
        if granted > 1:
            self._held[owner] = (granted - 1, self.clock() + LEASE_S)
        return 0.0
