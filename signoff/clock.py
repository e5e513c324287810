"""The one source of "now", so tests can move time without sleeping."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

_now: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731


def now() -> datetime:
    """Return the current time, timezone-aware UTC, truncated to microseconds."""
    return _now()


def set_clock(clock: Callable[[], datetime] | None) -> None:
    """Replace the clock (``None`` restores the system clock)."""
    global _now
    _now = clock if clock is not None else (lambda: datetime.now(UTC))


class FrozenClock:
    """A clock that stands still until advanced; for tests of leases, expiry and backoff."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> datetime:
        self.current += timedelta(seconds=seconds)
        return self.current
