"""Memory given back once many live connections have ended at once (a storm of sockets).

An ended websocket's or event stream's objects wait in reference cycles (uvicorn's
protocol, graphql-core's execution) for a full collection, which `signoff serve` makes
rare, and the allocator keeps what they freed. Once as many of them that held a slot
ended as are still open (and ``LIVE_RECLAIM_MIN_ENDED``), a full collection and glibc's
``malloc_trim`` run, at most once per ``LIVE_RECLAIM_INTERVAL_SECONDS`` (docs/design.md
8.5).
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import time
from collections.abc import Callable

from signoff.constants import (
    LIVE_RECLAIM_DELAY_SECONDS,
    LIVE_RECLAIM_INTERVAL_SECONDS,
    LIVE_RECLAIM_MIN_ENDED,
)

logger = logging.getLogger("signoff.live.reclaim")


def malloc_trim() -> Callable[[], object] | None:
    """glibc's ``malloc_trim(0)`` (returns the free pages of every arena to the system), or
    ``None`` where the C library has none (musl, macOS)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


class MemoryReclaim:
    """Counts the live connections open and ended; reclaims once enough have ended."""

    def __init__(
        self,
        *,
        min_ended: int = LIVE_RECLAIM_MIN_ENDED,
        delay: float = LIVE_RECLAIM_DELAY_SECONDS,
        interval: float = LIVE_RECLAIM_INTERVAL_SECONDS,
        collect: Callable[[], object] = gc.collect,
        trim: Callable[[], object] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.min_ended = min_ended
        self.delay = delay
        self.interval = interval
        self._collect = collect
        self._trim = trim
        self._clock = clock
        self.open = 0
        self.ended = 0  # since the last reclaim
        self.reclaims = 0
        self._last = -interval
        self._pending: asyncio.TimerHandle | None = None

    def opened(self) -> None:
        """A connection took its slot (a socket refused on the way costs no reclaim)."""
        self.open += 1

    def closed(self) -> None:
        """A connection counted by ``opened`` ended."""
        self.open -= 1
        self.ended += 1
        if self._pending is not None or self.ended < max(self.min_ended, self.open):
            return
        # After the burst (``delay``), and no sooner than ``interval`` after the last one.
        wait = max(self.delay, self._last + self.interval - self._clock())
        self._pending = asyncio.get_running_loop().call_later(wait, self.reclaim)

    def reclaim(self) -> None:
        """Free the cycles the ended connections left, then return the free pages."""
        self._pending = None
        self.ended = 0
        self._last = self._clock()
        self.reclaims += 1
        self._collect()
        if self._trim is not None:
            self._trim()
        logger.debug("reclaimed memory in %.3f s", self._clock() - self._last)
