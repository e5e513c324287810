"""One entity's events reach subscribers in the order of its transitions, whatever the
writers' clocks.

Two "processes" (each its own engine and sessions) share the test database; B's clock
runs 5 s behind A's. They take turns moving one proposal and its approval task through
the real resolvers, so by ``occurred_at`` every one of B's later transitions looks
older than A's earlier ones. Stamping must still follow each entity's versions.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import col, select

from signoff import clock
from signoff.config import Settings, load_sealer
from signoff.database import SessionMaker, create_engine, create_sessionmaker
from signoff.events import feed
from signoff.events.hub import Change, EventHub, MemoryTransport
from signoff.events.service import EventService
from signoff.evidence.sealing import Sealer
from signoff.models import ApprovalMode, ChangeEvent, Decision, Role
from signoff.resolvers.access.actors import authenticate, create_token
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.approval.approvals import decide_proposal
from signoff.resolvers.approval.proposals import propose_action
from signoff.resolvers.approval.queues import create_queue
from signoff.resolvers.approval.tasks import claim_task, release_task
from signoff.resolvers.core.work import Services, WorkMaker
from signoff.resolvers.targets.targets import register_target

SKEW = timedelta(seconds=5)
T = TypeVar("T")


@dataclass
class Process:
    """One writer process: its own engine's sessions and its own clock."""

    work: WorkMaker
    clock: clock.FrozenClock

    async def run(self, operation: Callable[..., Awaitable[T]], **arguments: Any) -> T:
        """Run a resolver in a fresh unit of work, with this process's clock as "now"."""
        self.clock.advance(0.001)
        clock.set_clock(self.clock)
        try:
            async with self.work() as work:
                return await operation(work=work, **arguments)
        finally:
            clock.set_clock(None)


def _work(engine: AsyncEngine, sealer: Sealer) -> WorkMaker:
    return WorkMaker(create_sessionmaker(engine), Services(sealer=sealer))


@pytest.fixture
async def processes(
    database_url: str, settings: Settings, clean_database: None
) -> AsyncIterator[tuple[Process, Process]]:
    """Process A, and process B whose clock is ``SKEW`` behind A's."""
    engines = [create_engine(database_url), create_engine(database_url)]
    sealer = load_sealer(settings)
    now = datetime.now(UTC)
    yield (
        Process(_work(engines[0], sealer), clock.FrozenClock(now)),
        Process(_work(engines[1], sealer), clock.FrozenClock(now - SKEW)),
    )
    for engine in engines:
        await engine.dispose()


@dataclass
class Cast:
    agent: Viewer
    reviewers: tuple[Viewer, Viewer]
    target_id: str


async def _viewer(process: Process, role: Role, queue_slugs: tuple[str, ...] = ()) -> Viewer:
    created = await process.run(
        create_token,
        name=f"{role.value}-{uuid.uuid4().hex[:6]}",
        role=role,
        queue_slugs=queue_slugs,
    )
    async with process.work.sessionmaker() as session:
        return await authenticate(session=session, token=created.token)


async def _cast(process: Process) -> Cast:
    """A queue, a target needing two approvals, an agent and two reviewers."""
    admin = await _viewer(process, Role.ADMIN)
    slug = f"q-{uuid.uuid4().hex[:8]}"
    queue = await process.run(create_queue, viewer=admin, slug=slug, name="Payments")
    target = await process.run(
        register_target,
        viewer=admin,
        name=f"refunds-{uuid.uuid4().hex[:6]}",
        url="https://refunds.example/hook",  # never delivered to
        input_schema={"type": "object"},
        approval_mode=ApprovalMode.HUMAN,
        queue_id=queue.id,
        required_approvals=2,
    )
    return Cast(
        agent=await _viewer(process, Role.AGENT),
        reviewers=(
            await _viewer(process, Role.REVIEWER, (slug,)),
            await _viewer(process, Role.REVIEWER, (slug,)),
        ),
        target_id=target.target.id,
    )


async def _take_turns(a: Process, b: Process, cast: Cast) -> tuple[str, str]:
    """Propose, claim, release, claim, approve, approve: A and B alternating."""
    first, second = cast.reviewers
    proposed = await a.run(
        propose_action,
        viewer=cast.agent,
        target_id=cast.target_id,
        action_code="refund.create",
        operation_key=uuid.uuid4().hex,
        payload={"amount": 100},
    )
    proposal = proposed.proposal
    assert proposed.task is not None
    task_id = proposed.task.id
    await b.run(claim_task, viewer=first, task_id=task_id)
    await a.run(release_task, viewer=first, task_id=task_id)
    await b.run(claim_task, viewer=second, task_id=task_id)
    for process, reviewer in ((a, second), (b, first)):
        await process.run(
            decide_proposal,
            viewer=reviewer,
            proposal_id=proposal.id,
            decision=Decision.APPROVED,
            payload_digest=proposal.payload_digest,
        )
    return proposal.id, task_id


TASK_KINDS = [
    (1, "task.created"),
    (2, "task.claimed"),
    (3, "task.released"),
    (4, "task.claimed"),
    (5, "task.reopened"),
    (6, "task.completed"),
]
PROPOSAL_KINDS = [
    (1, "proposal.proposed"),
    (2, "proposal.approval_added"),
    (3, "proposal.approved"),
]


async def _events_of(sessionmaker: SessionMaker, entity_id: str) -> list[ChangeEvent]:
    async with sessionmaker() as session:
        stmt = select(ChangeEvent).where(ChangeEvent.entity_id == entity_id)
        rows = list((await session.exec(stmt.order_by(col(ChangeEvent.cursor)))).all())
        await session.commit()
    return rows


def _service(sessionmaker: SessionMaker) -> EventService:
    async def load_after(after: int, through: int | None) -> list[Change]:
        async with sessionmaker() as session:
            rows = await feed.events_after(session, after, through=through)
            await session.commit()
        return [Change.from_row(row) for row in rows]

    hub = EventHub(MemoryTransport(), load_after, buffer=1000)
    return EventService(hub, sessionmaker, relay_seconds=60, retention=timedelta(days=1))


async def test_skewed_writers_are_stamped_and_delivered_in_version_order(
    processes: tuple[Process, Process],
) -> None:
    a, b = processes
    cast = await _cast(a)
    proposal_id, task_id = await _take_turns(a, b, cast)
    unstamped = await _events_of(a.work.sessionmaker, task_id)
    by_clock = sorted(unstamped, key=lambda e: (e.occurred_at, e.id))
    assert [e.entity_version for e in by_clock] == [2, 4, 6, 1, 3, 5], "clocks should invert"

    service = _service(a.work.sessionmaker)
    subscriber = service.hub.subscribe(lambda change: change.entity_id in {proposal_id, task_id})
    await service.start()  # stamps and publishes everything pending
    await service.stop()

    for entity_id, expected in ((task_id, TASK_KINDS), (proposal_id, PROPOSAL_KINDS)):
        stamped = await _events_of(a.work.sessionmaker, entity_id)
        assert [(e.entity_version, e.kind) for e in stamped] == expected
    received = [await subscriber.get() for _ in range(len(TASK_KINDS) + len(PROPOSAL_KINDS))]
    assert [(c.entity_version, c.kind) for c in received if c.entity_id == task_id] == TASK_KINDS
    assert [
        (c.entity_version, c.kind) for c in received if c.entity_id == proposal_id
    ] == PROPOSAL_KINDS
    assert [c.cursor for c in received] == sorted(c.cursor for c in received)
