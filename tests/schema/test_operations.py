"""``operationsSnapshot`` and ``deadLetters``: numbers equal a hand count of seeded rows,
and only operators and admins may read them."""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlmodel import select

from signoff import clock
from signoff.config import Settings
from signoff.models import (
    Actor,
    ChangeEvent,
    DeadLetter,
    DeadLetterState,
    HumanTask,
    Incident,
    IncidentState,
    Proposal,
    ProposalState,
    Queue,
    ReconciliationRun,
    ReconciliationState,
    Role,
    Target,
    TaskState,
)
from tests.helpers import GraphQLClient
from tests.processes import LOOPBACK_NETWORKS

SNAPSHOT = """
query {
  operationsSnapshot {
    generatedAt
    proposalDelivery { total pending inFlight retrying terminalFailures oldestDueAgeSeconds }
    changeEventRelay { total pending inFlight retrying terminalFailures oldestDueAgeSeconds }
    humanTasks { total pending inFlight retrying terminalFailures oldestDueAgeSeconds }
    openIncidents { severity count }
    proposalsByState { state count }
    reconciliationRuns { id state scannedCount repairedCount errorCode startedAt finishedAt }
  }
}
"""

DEAD_LETTERS = """
query($state: DeadLetterState, $first: Int, $after: String) {
  deadLetters(state: $state, first: $first, after: $after) {
    edges { node { id jobType jobId proposalId errorCode attemptCount state createdAt
                   incidentId } }
    pageInfo { hasNextPage endCursor }
  }
}
"""


@pytest.fixture
def settings(database_url: str) -> Settings:
    """No relay ticks during the test: the seeded change events keep the state given."""
    return Settings(
        database_url=database_url,
        embedded_worker=False,
        secret_key=os.environ["SIGNOFF_SECRET_KEY"],
        audit_signing_key=os.environ["SIGNOFF_AUDIT_SIGNING_KEY"],
        delivery_allow_networks=LOOPBACK_NETWORKS,
        events_relay_seconds=3600.0,
    )


class Seed:
    """Rows written straight into the tables, around one queue, target and agent."""

    def __init__(
        self, now: datetime, admin: str, actor_id: str, queue_id: str, target_id: str
    ) -> None:
        self.now, self.admin, self.actor_id = now, admin, actor_id
        self.queue_id, self.target_id = queue_id, target_id
        self.rows: list[Any] = []

    def ago(self, seconds: float) -> datetime:
        return self.now - timedelta(seconds=seconds)

    def proposal(self, state: ProposalState, **values: Any) -> Proposal:
        proposal = Proposal(
            target_id=self.target_id,
            proposed_by_id=self.actor_id,
            action_code="refund.create",
            payload_digest="sha256:" + "0" * 64,
            request_digest="sha256:" + "0" * 64,
            operation_key=uuid.uuid4().hex,
            state=state,
            expires_at=self.now + timedelta(days=1),
            **values,
        )
        self.rows.append(proposal)
        return proposal

    def task(self, state: TaskState, due_in: float, **values: Any) -> None:
        self.rows.append(
            HumanTask(
                queue_id=self.queue_id,
                kind="REVIEW",
                title="Look",
                state=state,
                due_at=self.now + timedelta(seconds=due_in),
                created_by_id=self.actor_id,
                **values,
            )
        )

    def event(self, age: float, cursor: int | None, published: bool) -> None:
        self.rows.append(
            ChangeEvent(
                kind="queue.created",
                entity_type="queue",
                entity_id=self.queue_id,
                cursor=cursor,
                occurred_at=self.ago(age),
                published_at=self.now if published else None,
            )
        )

    def incident(self, severity: str, state: IncidentState) -> Incident:
        incident = Incident(
            fingerprint=uuid.uuid4().hex,
            kind="delivery_dead_letter",
            severity=severity,
            state=state,
            title="Delivery gave up",
            entity_type="proposal",
            entity_id=str(uuid.uuid4()),
            first_seen_at=self.now,
            last_seen_at=self.now,
        )
        self.rows.append(incident)
        return incident


async def seed_mix(gql: GraphQLClient, now: datetime) -> tuple[Seed, list[ReconciliationRun]]:
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
    seed = Seed(now, admin, actor.id, queue.id, target.id)

    # Proposal delivery: 3 QUEUED (2 due, the oldest 300 s ago), 2 APPLYING (one lease lapsed
    # 30 s ago), 2 FAILED retrying (one due 100 s ago), 1 FAILED terminal; plus others.
    seed.proposal(ProposalState.QUEUED, next_attempt_at=seed.ago(300))
    seed.proposal(ProposalState.QUEUED, next_attempt_at=seed.ago(5))
    seed.proposal(ProposalState.QUEUED, next_attempt_at=now + timedelta(seconds=60))
    seed.proposal(ProposalState.APPLYING, lease_expires_at=now + timedelta(seconds=60))
    seed.proposal(ProposalState.APPLYING, lease_expires_at=seed.ago(30))
    seed.proposal(ProposalState.FAILED, next_attempt_at=seed.ago(100))
    seed.proposal(ProposalState.FAILED, next_attempt_at=now + timedelta(seconds=600))
    seed.proposal(ProposalState.FAILED, delivery_terminal=True, next_attempt_at=None)
    seed.proposal(ProposalState.APPLIED)
    seed.proposal(ProposalState.APPLIED)
    seed.proposal(ProposalState.APPROVAL_REQUIRED)
    seed.proposal(ProposalState.REJECTED)

    # Change events: 2 unstamped (oldest 40 s), 1 stamped within the grace, 2 stamped and
    # older, 3 published (one of them very old, which must not count).
    seed.event(40, None, published=False)
    seed.event(1, None, published=False)
    seed.event(0.5, 1, published=False)
    seed.event(10, 2, published=False)
    seed.event(20, 3, published=False)
    seed.event(3600, 4, published=True)
    seed.event(5, 5, published=True)
    seed.event(1, 6, published=True)

    # Tasks: 3 OPEN (one overdue by 600 s), 1 CLAIMED live, 1 CLAIMED lapsed (overdue 50 s),
    # 2 finished (overdue, not counted).
    seed.task(TaskState.OPEN, due_in=-600)
    seed.task(TaskState.OPEN, due_in=3600)
    seed.task(TaskState.OPEN, due_in=7200)
    seed.task(TaskState.CLAIMED, due_in=60, claim_expires_at=now + timedelta(seconds=60))
    seed.task(TaskState.CLAIMED, due_in=-50, claim_expires_at=seed.ago(1))
    seed.task(TaskState.COMPLETED, due_in=-9000)
    seed.task(TaskState.EXPIRED, due_in=-9000)

    # Incidents: open 1 CRITICAL, 2 HIGH (one acknowledged), 1 LOW; resolved ones don't count.
    critical = seed.incident("CRITICAL", IncidentState.OPEN)
    seed.incident("HIGH", IncidentState.OPEN)
    seed.incident("HIGH", IncidentState.ACKNOWLEDGED)
    seed.incident("LOW", IncidentState.OPEN)
    seed.incident("CRITICAL", IncidentState.RESOLVED)
    seed.incident("MEDIUM", IncidentState.RESOLVED)

    runs = [
        ReconciliationRun(
            state=ReconciliationState.SUCCEEDED,
            scanned_count=i,
            repaired_count=i % 2,
            started_at=seed.ago(600 - i * 60),
            finished_at=seed.ago(590 - i * 60),
        )
        for i in range(7)
    ]
    async with gql.sessionmaker() as session:
        session.add_all(seed.rows)
        await session.flush()
        session.add_all(runs)
        session.add_all(
            DeadLetter(
                incident_id=critical.id,
                job_type="deliver_proposal",
                job_id=str(uuid.uuid4()),
                error_code=f"E{i}",
                attempt_count=i,
                state=DeadLetterState.RESOLVED if i == 0 else DeadLetterState.OPEN,
                created_at=seed.ago(100 - i),
            )
            for i in range(4)
        )
        await session.commit()
    return seed, runs


async def test_snapshot_equals_a_hand_count(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    now = frozen_clock.current.replace(microsecond=0)
    frozen_clock.current = now
    _, runs = await seed_mix(gql, now)
    operator = await gql.token(Role.OPERATOR)

    snapshot = (await gql(SNAPSHOT, token=operator))["operationsSnapshot"]

    assert datetime.fromisoformat(snapshot["generatedAt"]) == now
    assert snapshot["proposalDelivery"] == {
        "total": 8,
        "pending": 3,
        "inFlight": 2,
        "retrying": 2,
        "terminalFailures": 1,
        "oldestDueAgeSeconds": 300.0,
    }
    assert snapshot["changeEventRelay"] == {
        "total": 5,
        "pending": 2,
        "inFlight": 1,
        "retrying": 2,
        "terminalFailures": 0,
        "oldestDueAgeSeconds": 40.0,
    }
    assert snapshot["humanTasks"] == {
        "total": 5,
        "pending": 3,
        "inFlight": 1,
        "retrying": 1,
        "terminalFailures": 0,
        "oldestDueAgeSeconds": 600.0,
    }
    assert snapshot["openIncidents"] == [
        {"severity": "CRITICAL", "count": 1},
        {"severity": "HIGH", "count": 2},
        {"severity": "MEDIUM", "count": 0},
        {"severity": "LOW", "count": 1},
    ]
    by_state = {row["state"]: row["count"] for row in snapshot["proposalsByState"]}
    assert by_state == {
        **{state.value: 0 for state in ProposalState},
        "QUEUED": 3,
        "APPLYING": 2,
        "FAILED": 3,
        "APPLIED": 2,
        "APPROVAL_REQUIRED": 1,
        "REJECTED": 1,
    }
    newest = sorted(runs, key=lambda r: r.started_at, reverse=True)[:5]
    assert [r["id"] for r in snapshot["reconciliationRuns"]] == [r.id for r in newest]
    assert snapshot["reconciliationRuns"][0]["scannedCount"] == 6


async def test_nothing_due_reads_null_ages(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN)
    snapshot = (await gql(SNAPSHOT, token=admin))["operationsSnapshot"]
    for outbox in ("proposalDelivery", "changeEventRelay", "humanTasks"):
        assert snapshot[outbox]["total"] == 0
        assert snapshot[outbox]["oldestDueAgeSeconds"] is None
    assert snapshot["reconciliationRuns"] == []


async def test_dead_letters_newest_first_by_state_and_paged(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    seed, _ = await seed_mix(gql, frozen_clock.current)
    operator = await gql.token(Role.OPERATOR)

    first = (await gql(DEAD_LETTERS, {"state": "OPEN", "first": 2}, operator))["deadLetters"]
    nodes = [edge["node"] for edge in first["edges"]]
    assert [n["errorCode"] for n in nodes] == ["E3", "E2"]
    assert first["pageInfo"]["hasNextPage"] is True
    assert nodes[0]["jobType"] == "deliver_proposal"
    assert nodes[0]["attemptCount"] == 3
    assert nodes[0]["state"] == "OPEN"
    assert nodes[0]["proposalId"] is None
    rest = (
        await gql(
            DEAD_LETTERS,
            {"state": "OPEN", "first": 2, "after": first["pageInfo"]["endCursor"]},
            operator,
        )
    )["deadLetters"]
    assert [e["node"]["errorCode"] for e in rest["edges"]] == ["E1"]
    assert rest["pageInfo"]["hasNextPage"] is False

    everything = (await gql(DEAD_LETTERS, {}, seed.admin))["deadLetters"]
    assert [e["node"]["errorCode"] for e in everything["edges"]] == ["E3", "E2", "E1", "E0"]


@pytest.mark.parametrize("role", [Role.REVIEWER, Role.AGENT, Role.INTEGRATION])
async def test_other_roles_are_forbidden(gql: GraphQLClient, role: Role) -> None:
    token = await gql.token(role)
    assert (await gql.error(SNAPSHOT, token=token)).code == "FORBIDDEN"
    assert (await gql.error(DEAD_LETTERS, token=token)).code == "FORBIDDEN"
