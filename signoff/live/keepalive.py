"""One timer for the keep-alive pings of every websocket of a process.

A server holds thousands of idle sockets; a task sleeping between pings for each of them
would cost a task, its coroutine and a timer per socket. Instead the sockets sit in
``SLOTS`` buckets, one of which is visited every ``seconds / SLOTS``: each socket is
visited once per ``seconds``, the first time a period after it joined (to within one
slot), as a timer of its own would. Sockets that connected over a few seconds are
pinged, and answer, over as many seconds a period later, not all at once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

logger = logging.getLogger("signoff.websocket")

SLOTS = 64


class Pinged(Protocol):
    """A connection the timer visits."""

    def beat(self) -> bool:
        """Ping (or close a connection that did not answer the last ping); ``False``: the
        connection needs no more visits."""


class KeepAlive:
    """Visits each registered connection every ``seconds``, the first visit a period after
    its registration (no sooner than ``seconds`` less one slot's share)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._slots: list[dict[Pinged, None]] = [{} for _ in range(SLOTS)]
        self._where: dict[Pinged, int] = {}
        self._visited = 0  # the slot visited last: a new connection's comes a period later
        self._task: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._where)

    def add(self, connection: Pinged) -> None:
        self._where[connection] = self._visited
        self._slots[self._visited][connection] = None
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="signoff-ws-keep-alive")

    def discard(self, connection: Pinged) -> None:
        slot = self._where.pop(connection, None)
        if slot is not None:
            del self._slots[slot][connection]

    async def _run(self) -> None:
        """Visit the next slot every ``seconds / SLOTS`` while any connection is registered."""
        while self._where:
            await asyncio.sleep(self.seconds / SLOTS)
            self._visited = (self._visited + 1) % SLOTS
            for connection in list(self._slots[self._visited]):
                try:
                    keep = connection.beat()
                except Exception as exc:  # one connection's failure is not every other's
                    logger.debug("keep-alive ping failed: %s", type(exc).__name__)
                    keep = False
                if not keep:
                    self.discard(connection)
