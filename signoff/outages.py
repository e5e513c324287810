"""Outages of what a process depends on (the database, Redis): logged once, not per failure.

While PostgreSQL restarts, every request and every background round fails the same way;
a line for each would bury the one that says what happened. An ``Outage`` logs a
WARNING when the first failure is seen, counts the rest, and logs once more, at INFO,
when the service answers again.
"""

from __future__ import annotations

import logging
import time

logger = logging.getLogger("signoff.outages")


class Outage:
    """The state of one dependency: up, or down since a moment, with a count of failures."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.since: float | None = None
        self.failures = 0
        self.ended = 0  # how many outages have ended: lets a caller date what it holds

    @property
    def down(self) -> bool:
        return self.since is not None

    def failed(self, condition: str) -> None:
        """A failure that means ``what`` cannot be reached; only the first is logged."""
        self.failures += 1
        if self.since is None:
            self.since = time.monotonic()
            logger.warning(
                "%s unreachable (%s); retrying by itself until it answers",
                self.what,
                condition,
            )

    def answered(self) -> None:
        """``what`` answered: log the end of an outage, if there was one."""
        if self.since is None:
            return
        logger.info(
            "%s reachable again after %.1f s (%d failed attempts)",
            self.what,
            time.monotonic() - self.since,
            self.failures,
        )
        self.since, self.failures = None, 0
        self.ended += 1
