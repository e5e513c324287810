"""The last day of operations, hour by hour: proposals decided and applied, how long
decisions took (p50, p90, p99) and how many incidents were open. The console draws its
charts from it.

Every figure is computed by the database, in SQL that SQLite and PostgreSQL both run: an
hour is a ``CASE`` over the hour boundaries (bound parameters, no date functions), counts
are conditional aggregates, and a percentile is the nearest-rank pick of ``ROW_NUMBER()``
over the durations. Only a duration needs the dialect's own arithmetic (``_seconds``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlmodel import col, func
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import OPERATIONS_STATISTICS_HOURS
from signoff.models import Incident, Proposal, Role
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.incidents.operations import count_where

HOUR = timedelta(hours=1)
PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class DecisionTimes:
    """Seconds from proposed to decided, nearest-rank percentiles; ``None`` with no decision."""

    count: int
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


@dataclass(frozen=True)
class HourStatistics:
    """One hour from ``start``. ``open_incidents`` is counted at the hour's end (at the
    statistics' ``until`` for the current hour)."""

    start: datetime
    decided: int
    applied: int
    open_incidents: int
    time_to_decision: DecisionTimes


@dataclass(frozen=True)
class OperationsStatistics:
    """From ``since`` (the start of the first hour) to ``until`` (now), oldest hour first."""

    since: datetime
    until: datetime
    hours: list[HourStatistics]
    time_to_decision: DecisionTimes


@dataclass(frozen=True)
class Window:
    """The hours read: each one's start, and the instant ``until`` that ends the last."""

    starts: list[datetime]
    until: datetime

    @classmethod
    def ending(cls, now: datetime, hours: int) -> Window:
        current = now.replace(minute=0, second=0, microsecond=0)
        return cls([current - HOUR * (hours - 1 - i) for i in range(hours)], now)

    @property
    def since(self) -> datetime:
        return self.starts[0]

    def ends(self) -> list[datetime]:
        """Where each hour's sample of a state is taken: its end, or now for the last."""
        return [min(start + HOUR, self.until) for start in self.starts]

    def within(self, column: Any) -> Any:
        return sa.and_(column >= self.since, column < self.starts[-1] + HOUR)

    def hour_of(self, column: Any) -> Any:
        """The index of the hour ``column`` falls in (for rows ``within`` the window)."""
        return sa.case(
            *((column < start + HOUR, index) for index, start in enumerate(self.starts)),
            else_=None,
        )


async def operations_statistics(*, session: AsyncSession, viewer: Viewer) -> OperationsStatistics:
    """The last day's statistics, for operators and admins."""
    require_role(viewer, Role.OPERATOR)
    return await read_statistics(session, Window.ending(clock.now(), OPERATIONS_STATISTICS_HOURS))


async def read_statistics(session: AsyncSession, window: Window) -> OperationsStatistics:
    """Every figure of ``window``; the caller's session is only read."""
    connection = await session.connection()
    decided, applied = await _decided_and_applied(connection, window)
    open_incidents = await _open_incidents(connection, window)
    by_hour = await _decision_times(connection, window, by_hour=True)
    overall = await _decision_times(connection, window, by_hour=False)
    hours = [
        HourStatistics(
            start=start,
            decided=decided[index],
            applied=applied[index],
            open_incidents=open_incidents[index],
            time_to_decision=by_hour.get(index, DecisionTimes(0)),
        )
        for index, start in enumerate(window.starts)
    ]
    return OperationsStatistics(
        since=window.since,
        until=window.until,
        hours=hours,
        time_to_decision=overall.get(0, DecisionTimes(0)),
    )


def _in_hour(column: Any, start: datetime) -> Any:
    return sa.and_(column >= start, column < start + HOUR)


async def _decided_and_applied(
    connection: AsyncConnection, window: Window
) -> tuple[list[int], list[int]]:
    """Proposals decided (approved, rejected, or decided by a deadline) and applied
    (delivered, or executed by their agent) in each hour."""
    decided, applied = col(Proposal.decided_at), col(Proposal.applied_at)
    stmt = sa.select(
        *(count_where(_in_hour(decided, start)) for start in window.starts),
        *(count_where(_in_hour(applied, start)) for start in window.starts),
    ).where(sa.or_(window.within(decided), window.within(applied)))
    row = [int(n) for n in (await connection.execute(stmt)).one()]
    hours = len(window.starts)
    return row[:hours], row[hours:]


async def _open_incidents(connection: AsyncConnection, window: Window) -> list[int]:
    """Incidents open at each hour's end: seen by then and not resolved by then. A
    recurrence clears ``resolved_at``, so an incident resolved and later re-opened counts
    as open from its first sighting."""
    first_seen, resolved = col(Incident.first_seen_at), col(Incident.resolved_at)
    stmt = sa.select(
        *(
            count_where(sa.and_(first_seen <= end, sa.or_(resolved.is_(None), resolved > end)))
            for end in window.ends()
        )
    ).where(first_seen <= window.until, sa.or_(resolved.is_(None), resolved > window.since))
    return [int(n) for n in (await connection.execute(stmt)).one()]


def _nearest_rank(n: Any, percentile: int) -> Any:
    """ceil(percentile * n / 100) in integers, so SQL and Python compute it alike."""
    return (n * percentile + 99) // 100


def _seconds(start: Any, end: Any, dialect: str) -> Any:
    """``end - start`` in seconds: SQLite stores times as text, PostgreSQL as timestamptz."""
    if dialect == "postgresql":
        return sa.extract("epoch", end - start)
    return (func.julianday(end) - func.julianday(start)) * 86400.0


async def _decision_times(
    connection: AsyncConnection, window: Window, *, by_hour: bool
) -> dict[int, DecisionTimes]:
    """Time to decision per hour (keyed by the hour's index), or over the whole window
    (keyed 0). The nearest rank of percentile p among n is ceil(p * n / 100)."""
    decided, created = col(Proposal.decided_at), col(Proposal.created_at)
    seconds = _seconds(created, decided, connection.dialect.name)
    hour = window.hour_of(decided) if by_hour else sa.literal(0)
    durations = (
        sa.select(hour.label("hour"), seconds.label("seconds"))
        .where(window.within(decided))
        .subquery()
    )
    ranked = sa.select(
        durations.c.hour,
        durations.c.seconds,
        func.row_number()
        .over(partition_by=durations.c.hour, order_by=durations.c.seconds)
        .label("rank"),
        func.count().over(partition_by=durations.c.hour).label("n"),
    ).subquery()
    stmt = sa.select(ranked.c.hour, ranked.c.n, ranked.c.rank, ranked.c.seconds).where(
        sa.or_(*(ranked.c.rank == _nearest_rank(ranked.c.n, p) for p in PERCENTILES))
    )
    found: dict[int, dict[str, Any]] = {}
    for hour_index, n, rank, value in await connection.execute(stmt):
        times = found.setdefault(int(hour_index), {"count": int(n)})
        for p in PERCENTILES:
            if rank == _nearest_rank(int(n), p):
                times[f"p{p}"] = round(max(0.0, float(value)), 3)
    return {index: DecisionTimes(**times) for index, times in found.items()}
