"""The objects writers read for their events, kept until this process stamps them.

On PostgreSQL events are stamped after their commit, by whichever process's sequencer
gets there first. A writer of this process hands over, by change-event id, the
records it read in its transaction (``feed.written_objects``); the sequencer takes
them when it stamps those events here. Entries for events another process stamped
are never taken, so the map is bounded by age and by count.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from signoff.constants import FEED_WRITTEN_KEEP_RELAY_PERIODS, FEED_WRITTEN_LIMIT


class WrittenObjects:
    """Per change-event id, the records its frame shows (``Change.written``)."""

    def __init__(self, *, keep_seconds: float, limit: int) -> None:
        self.keep_seconds = keep_seconds
        self.limit = limit
        # In the order handed over, so the oldest entries are the first.
        self._entries: dict[str, tuple[float, Mapping[str, Any]]] = {}

    @classmethod
    def for_relay(cls, relay_seconds: float) -> WrittenObjects:
        """Entries kept a few relay periods: an event stamped here is taken well before."""
        return cls(
            keep_seconds=FEED_WRITTEN_KEEP_RELAY_PERIODS * relay_seconds, limit=FEED_WRITTEN_LIMIT
        )

    def __len__(self) -> int:
        return len(self._entries)

    def hand_over(self, objects: Mapping[str, Mapping[str, Any]]) -> None:
        """Keep ``objects`` (by event id) for the sequencer, dropping what is too old."""
        now = time.monotonic()
        for event_id, written in objects.items():
            self._entries[event_id] = (now, written)
        self.drop_old()

    def take(self, event_id: str) -> Mapping[str, Any] | None:
        """The records handed over for ``event_id``, once: the entry goes."""
        entry = self._entries.pop(event_id, None)
        return None if entry is None else entry[1]

    def drop_old(self) -> None:
        """Drop entries older than ``keep_seconds``, and the oldest past ``limit``."""
        entries = self._entries
        since = time.monotonic() - self.keep_seconds
        while entries:
            event_id, (handed_at, _) = next(iter(entries.items()))
            if handed_at >= since and len(entries) <= self.limit:
                return
            del entries[event_id]
