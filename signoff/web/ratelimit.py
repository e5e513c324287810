"""A request rate limit: one token bucket per key (a bearer token, a link client's
address), in this process.

Buckets are keyed by the key's SHA-256, so no token is kept in memory. At most
``max_keys`` buckets are kept; the least recently used goes first, so a flood of
made-up tokens costs memory for ``max_keys`` buckets and no more.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable

from signoff.constants import RATE_LIMIT_MAX_TOKENS_TRACKED


class RateLimiter:
    """``per_second`` requests a second per key after a burst of ``burst``; off at 0."""

    def __init__(
        self,
        per_second: float,
        burst: int,
        *,
        max_keys: int = RATE_LIMIT_MAX_TOKENS_TRACKED,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_second = per_second
        self.burst = max(1, burst)
        self.max_keys = max_keys
        self._clock = clock
        self._buckets: dict[bytes, tuple[float, float]] = {}  # key -> (level, when)

    def retry_after(self, token: str) -> float | None:
        """Take one request from the key's bucket: ``None`` if allowed, else the seconds
        until one more request would be, rounded up to the millisecond: a bucket a hair
        short of a whole request must not tell its client to retry after 0 s."""
        if self.per_second <= 0:
            return None
        key = hashlib.sha256(token.encode("utf-8", "replace")).digest()
        now = self._clock()
        level, when = self._buckets.pop(key, (float(self.burst), now))
        level = min(float(self.burst), level + (now - when) * self.per_second)
        wait = None if level >= 1 else math.ceil((1 - level) / self.per_second * 1000) / 1000
        self._buckets[key] = (level - 1 if wait is None else level, now)  # most recent last
        if len(self._buckets) > self.max_keys:
            del self._buckets[next(iter(self._buckets))]
        return wait
