"""A broadcast group's newest frames, for subscribers that resume.

After a restart every console resumes from its own last cursor. A group keeps the frames
it rendered for its newest events (live, or read back once for the first subscriber that
needed them), so everyone resuming within them catches up from here, and only one resuming
from further back than the log reaches reads on its own (docs/design.md section 8.3).
"""

from __future__ import annotations

import bisect

from signoff.live.prepared_frames import Payload


class Budget:
    """The bytes every group's log may hold together in one process: a process with
    thousands of small groups (one per agent, say) keeps as much as one with a single
    large group. A log over it gives up its own oldest frames first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    @property
    def exceeded(self) -> bool:
        return self.used > self.limit


class FrameLog:
    """The frames of every event the group sees with ``since < cursor``, in cursor
    order, at most ``size`` of them and within the process's ``budget`` (the oldest go
    first, raising ``since``)."""

    def __init__(self, since: int, size: int, budget: Budget) -> None:
        self.since = since
        self.size = size
        self._budget = budget
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
        self._budget.used += payload.size
        self._trim()

    def fits(self, count: int, size: int) -> bool:
        """Whether ``count`` older frames of ``size`` bytes can be added without dropping
        any."""
        within_budget = self._budget.used + size <= self._budget.limit
        return len(self._cursors) + count <= self.size and within_budget

    def prepend(self, since: int, frames: list[tuple[int, Payload]]) -> None:
        """Frames of every event the group sees with ``since < cursor <= self.since``,
        read back for a subscriber resuming after ``since``."""
        assert since < self.since and all(since < c <= self.since for c, _ in frames)
        self._cursors[:0] = [cursor for cursor, _ in frames]
        self._payloads[:0] = [payload for _, payload in frames]
        self._budget.used += sum(payload.size for _, payload in frames)
        self.since = since
        self._trim()

    def after(self, cursor: int, limit: int) -> list[tuple[int, Payload]]:
        """Up to ``limit`` frames after ``cursor`` (which must be ``since`` or later)."""
        assert cursor >= self.since
        start = bisect.bisect_right(self._cursors, cursor)
        end = start + limit
        return list(zip(self._cursors[start:end], self._payloads[start:end], strict=True))

    def clear(self) -> None:
        """Give every frame back to the budget (the group closed)."""
        if self._cursors:
            self._drop(len(self._cursors))

    def _trim(self) -> None:
        excess = len(self._cursors) - self.size
        while self._budget.exceeded and excess < len(self._cursors):
            excess += 1
        if excess > 0:
            self._drop(excess)

    def _drop(self, count: int) -> None:
        self.since = self._cursors[count - 1]
        self._budget.used -= sum(payload.size for payload in self._payloads[:count])
        del self._cursors[:count]
        del self._payloads[:count]
