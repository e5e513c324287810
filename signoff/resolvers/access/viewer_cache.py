"""Who a bearer token is, remembered for a few seconds (``SIGNOFF_AUTH_CACHE_SECONDS``).

Reading the viewer was the largest cost of a small request. An access change event makes
every process forget the actor at once, and only successes are kept, so a new token works
at once (docs/design.md section 10).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable

from signoff.resolvers.access.rules import Viewer

# Tokens kept at once; past this the cache starts over (a flood of distinct valid tokens
# costs reads, never memory).
VIEWER_CACHE_SIZE = 4096


def _live(viewer: Viewer) -> bool:
    """Whether the viewer's credential has not ended by itself (a provider token's
    ``exp``): an expired one is read again, and refused there."""
    return viewer.expires_at is None or viewer.expires_at > time.time()


class ViewerCache:
    """Token -> viewer, each entry kept ``seconds`` after it was read.

    Lookups of one token that miss at the same moment share one read: a thousand
    dashboards reconnecting with one token after a deploy read it once, not a thousand
    times over a saturated pool.
    """

    def __init__(
        self,
        seconds: float,
        *,
        size: int = VIEWER_CACHE_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.seconds = seconds
        self.size = size
        self._clock = clock
        self._viewers: dict[str, tuple[float, Viewer]] = {}  # token -> (read at, viewer)
        self._reading: dict[str, asyncio.Future[Viewer]] = {}  # token -> the read under way

    async def viewer(
        self, token: str, read: Callable[[], Awaitable[Viewer]], *, fresh: bool = False
    ) -> Viewer:
        """The viewer behind ``token``: kept, or ``read()`` (always, when ``fresh``).
        ``read`` raises for a token that does not authenticate; nothing is kept then."""
        now = self._clock()
        kept = self._viewers.get(token)
        if not fresh and kept is not None and now - kept[0] < self.seconds and _live(kept[1]):
            return kept[1]
        self._viewers.pop(token, None)
        reading = self._reading.get(token)
        if reading is None or fresh:
            reading = self._reading[token] = asyncio.ensure_future(read())
            reading.add_done_callback(functools.partial(self._read_done, token, now))
        # One caller going away (its client disconnected) must not cancel the others' read.
        return await asyncio.shield(reading)

    def forget_actor(self, actor_id: str) -> None:
        """Forget the viewers of one actor (its access changed); reads of its tokens under
        way are not kept when they end."""
        for token in [t for t, (_, viewer) in self._viewers.items() if viewer.id == actor_id]:
            del self._viewers[token]
        self._reading.clear()

    def clear(self) -> None:
        """Forget every viewer; reads under way are not kept when they end."""
        self._viewers.clear()
        self._reading.clear()

    def _read_done(self, token: str, read_at: float, reading: asyncio.Future[Viewer]) -> None:
        if self._reading.get(token) is not reading:
            return  # cleared, or replaced by a fresh read, meanwhile
        del self._reading[token]
        if reading.cancelled() or reading.exception() is not None or self.seconds <= 0:
            return
        if len(self._viewers) >= self.size:
            self._viewers.clear()
        self._viewers[token] = (read_at, reading.result())
