"""A broadcast group's newest frames, for subscribers that resume.

After a restart every console resumes after the last cursor it saw, and consoles that
were away for different spans hold different cursors. Each used to replay on its own:
one read and one execution per missed event per socket. A group instead keeps the
frames it rendered for its newest events (live, or read back once for the first
subscriber that needed them), so everyone resuming within them catches up from here,
and only a subscriber resuming from further back than the log reaches reads on its own.
"""

from __future__ import annotations

import bisect

from signoff.live.prepared_frames import Payload


class FrameLog:
    """The frames of every event the group sees with ``since < cursor``, in cursor
    order, at most ``size`` of them (the oldest go first, raising ``since``)."""

    def __init__(self, since: int, size: int) -> None:
        self.since = since
        self.size = size
        self._cursors: list[int] = []
        self._payloads: list[Payload] = []

    def __len__(self) -> int:
        return len(self._cursors)

    def append(self, cursor: int, payload: Payload) -> None:
        """A live event's frame (cursors arrive in order)."""
        if cursor <= self.since or (self._cursors and cursor <= self._cursors[-1]):
            return
        self._cursors.append(cursor)
        self._payloads.append(payload)
        self._trim()

    def fits(self, count: int) -> bool:
        """Whether ``count`` older frames can be added without dropping any."""
        return len(self._cursors) + count <= self.size

    def prepend(self, since: int, frames: list[tuple[int, Payload]]) -> None:
        """Frames of every event the group sees with ``since < cursor <= self.since``,
        read back for a subscriber resuming after ``since``."""
        assert since < self.since and all(since < c <= self.since for c, _ in frames)
        self._cursors[:0] = [cursor for cursor, _ in frames]
        self._payloads[:0] = [payload for _, payload in frames]
        self.since = since
        self._trim()

    def after(self, cursor: int, limit: int) -> list[tuple[int, Payload]]:
        """Up to ``limit`` frames after ``cursor`` (which must be ``since`` or later)."""
        assert cursor >= self.since
        start = bisect.bisect_right(self._cursors, cursor)
        end = start + limit
        return list(zip(self._cursors[start:end], self._payloads[start:end], strict=True))

    def _trim(self) -> None:
        excess = len(self._cursors) - self.size
        if excess > 0:
            self.since = self._cursors[excess - 1]
            del self._cursors[:excess]
            del self._payloads[:excess]
