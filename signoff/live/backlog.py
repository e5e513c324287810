"""What one subscriber's writer has yet to send, bounded in frames and in bytes.

A live frame that cannot leave at once waits in its connection's queue. Counting frames
alone let a client that never reads hold ``frame_limit`` frames of any size (a few large
payloads each, hundreds of megabytes across a few hundred sockets); the byte bound caps
what one subscriber can make the process keep, whatever its frames weigh. Past either
bound the subscriber is cut off (websockets close with 4429, event streams end); a
replay waits while either is past half.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Backlog:
    """Counts of the live frames queued for one subscriber and their size."""

    __slots__ = ("_room", "byte_limit", "frame_limit", "frames", "size")

    def __init__(self, frame_limit: int, byte_limit: int) -> None:
        self.frame_limit = frame_limit
        self.byte_limit = byte_limit
        self.frames = 0
        self.size = 0
        self._room: asyncio.Future[None] | None = None

    def admits(self, size: int) -> bool:
        """Whether one more frame of ``size`` fits. The first always does: a frame larger
        than the byte bound still reaches a client that reads."""
        if self.frames == 0:
            return self.frame_limit > 0
        return self.frames < self.frame_limit and self.size + size <= self.byte_limit

    def add(self, size: int) -> None:
        self.frames += 1
        self.size += size

    def remove(self, size: int) -> None:
        """A queued frame left (or was dropped); a replay may go on below half."""
        self.frames -= 1
        self.size -= size
        if not self._past_half():
            self.make_room()

    def clear(self) -> None:
        self.frames = 0
        self.size = 0
        self.make_room()

    def make_room(self) -> None:
        if self._room is not None and not self._room.done():
            self._room.set_result(None)

    async def wait_for_room(self, closed: Callable[[], bool]) -> None:
        """Until no more than half of either bound waits (paces a replay to the client)."""
        while not closed() and self._past_half():
            if self._room is None or self._room.done():
                self._room = asyncio.get_running_loop().create_future()
            await self._room

    def _past_half(self) -> bool:
        return self.frames >= self.frame_limit // 2 or self.size >= self.byte_limit // 2
