"""``operationsStatistics``: the last 24 hours hour by hour equal a hand count of seeded rows
(hour boundaries, nearest-rank percentiles, incidents open at each hour's end), and only
operators and admins may read them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlmodel import select

from signoff import clock
from signoff.models import Actor, Incident, IncidentState, ProposalState, Queue, Role, Target
from tests.helpers import GraphQLClient
from tests.schema.test_operations import Seed

STATISTICS = """
query {
  operationsStatistics {
    since until
    hours {
      start decided applied openIncidents
      timeToDecision { count p50Seconds p90Seconds p99Seconds }
    }
    timeToDecision { count p50Seconds p90Seconds p99Seconds }
  }
}
"""

NOW = datetime(2026, 12, 6, 14, 25, 30, tzinfo=UTC)
CURRENT_HOUR = datetime(2026, 12, 6, 14, tzinfo=UTC)
FIRST_HOUR = CURRENT_HOUR - timedelta(hours=23)
NONE = {"count": 0, "p50Seconds": None, "p90Seconds": None, "p99Seconds": None}


def hour(index: int, minutes: float = 0) -> datetime:
    """A moment ``minutes`` into the window's hour ``index`` (0: the oldest, 23: now's)."""
    return FIRST_HOUR + timedelta(hours=index, minutes=minutes)


async def new_seed(gql: GraphQLClient) -> Seed:
    admin = await gql.token(Role.ADMIN, name="admin")
    async with gql.sessionmaker() as session:
        actor = (await session.exec(select(Actor).where(Actor.name == "admin"))).one()
        queue = Queue(slug=f"q-{uuid.uuid4().hex[:8]}", name="Payments")
        target = Target(
            name="refunds",
            url="http://127.0.0.1:9/hook",
            signing_secret="x",
            queue_id=queue.id,
            created_by_id=actor.id,
        )
        session.add_all([queue, target])
        await session.commit()
    return Seed(NOW, admin, actor.id, queue.id, target.id)


def decided(seed: Seed, at: datetime, after_seconds: float, **values: Any) -> None:
    """A proposal made ``after_seconds`` before it was decided ``at``."""
    seed.proposal(
        ProposalState.APPROVED,
        created_at=at - timedelta(seconds=after_seconds),
        decided_at=at,
        **values,
    )


def incident(seed: Seed, first_seen: datetime, resolved: datetime | None) -> None:
    seed.rows.append(
        Incident(
            fingerprint=uuid.uuid4().hex,
            kind="delivery_dead_letter",
            severity="HIGH",
            state=IncidentState.OPEN if resolved is None else IncidentState.RESOLVED,
            title="Delivery gave up",
            entity_type="proposal",
            entity_id=str(uuid.uuid4()),
            first_seen_at=first_seen,
            last_seen_at=first_seen,
            resolved_at=resolved,
        )
    )


async def test_statistics_equal_a_hand_count(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    frozen_clock.current = NOW
    seed = await new_seed(gql)
    # Now's hour: ten decisions taking 60, 120, ... 600 s; two proposals applied.
    for i in range(1, 11):
        decided(seed, hour(23, minutes=i), 60 * i)
    for minutes in (1, 20):
        seed.proposal(ProposalState.APPLIED, applied_at=hour(23, minutes))
    # The hour before: one decided on its first instant (100 s), one on its last (3600 s).
    decided(seed, hour(22), 100)
    decided(seed, hour(23) - timedelta(microseconds=1), 3600)
    # The oldest hour's first instant counts; the instant before the window does not.
    decided(seed, hour(0), 5, applied_at=hour(0, 30))
    decided(seed, hour(0) - timedelta(microseconds=1), 9999, applied_at=hour(0, -1))
    seed.proposal(ProposalState.APPLIED, applied_at=hour(5, 59))
    seed.proposal(ProposalState.APPROVAL_REQUIRED)  # undecided: no figure
    # Incidents: open all day; opened in hour 10 and resolved in hour 20; resolved before
    # the window; opened a few minutes ago.
    incident(seed, NOW - timedelta(days=2), None)
    incident(seed, hour(10, 30), hour(20, 10))
    incident(seed, NOW - timedelta(days=3), NOW - timedelta(days=2))
    incident(seed, hour(23, 20), None)
    async with gql.sessionmaker() as session:
        session.add_all(seed.rows)
        await session.commit()
    operator = await gql.token(Role.OPERATOR)

    stats = (await gql(STATISTICS, token=operator))["operationsStatistics"]

    assert datetime.fromisoformat(stats["since"]) == FIRST_HOUR
    assert datetime.fromisoformat(stats["until"]) == NOW
    hours = stats["hours"]
    assert [datetime.fromisoformat(h["start"]) for h in hours] == [hour(i) for i in range(24)]
    assert [h["decided"] for h in hours] == [1] + [0] * 21 + [2, 10]
    assert [h["applied"] for h in hours] == [1, 0, 0, 0, 0, 1] + [0] * 17 + [2]
    assert [h["openIncidents"] for h in hours] == [1] * 10 + [2] * 10 + [1] * 3 + [2]
    # Nearest rank: of n durations, percentile p is the ceil(p * n / 100)-th smallest.
    assert hours[23]["timeToDecision"] == {
        "count": 10,
        "p50Seconds": 300.0,
        "p90Seconds": 540.0,
        "p99Seconds": 600.0,
    }
    assert hours[22]["timeToDecision"] == {
        "count": 2,
        "p50Seconds": 100.0,
        "p90Seconds": 3600.0,
        "p99Seconds": 3600.0,
    }
    assert hours[0]["timeToDecision"] == {
        "count": 1,
        "p50Seconds": 5.0,
        "p90Seconds": 5.0,
        "p99Seconds": 5.0,
    }
    assert all(h["timeToDecision"] == NONE for h in hours[1:22])
    # All 13: 5, 60, 100, 120, ..., 540, 600, 3600.
    assert stats["timeToDecision"] == {
        "count": 13,
        "p50Seconds": 300.0,
        "p90Seconds": 600.0,
        "p99Seconds": 3600.0,
    }


async def test_a_quiet_day_reads_zeros(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN)
    stats = (await gql(STATISTICS, token=admin))["operationsStatistics"]
    assert len(stats["hours"]) == 24
    for row in stats["hours"]:
        assert (row["decided"], row["applied"], row["openIncidents"]) == (0, 0, 0)
        assert row["timeToDecision"] == NONE
    assert stats["timeToDecision"] == NONE
    assert datetime.fromisoformat(stats["hours"][-1]["start"]) <= datetime.fromisoformat(
        stats["until"]
    )


@pytest.mark.parametrize("role", [Role.REVIEWER, Role.AGENT, Role.INTEGRATION])
async def test_other_roles_are_forbidden(gql: GraphQLClient, role: Role) -> None:
    token = await gql.token(role)
    error = await gql.error(STATISTICS, token=token)
    assert error.code == "FORBIDDEN"
    assert "operator" in error.errors[0]["message"]
