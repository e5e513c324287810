"""A list's page (``signoff.resolvers.core.pagination``): each combination of conditions is
compiled once and, on PostgreSQL's read sessions, runs through psycopg; a page must hold
what the same query through the ORM holds, whatever the values, the cursor or the
connection's time zone."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
from sqlalchemy import and_, event, or_, text
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.database import create_sessionmaker, read_only
from signoff.models import HumanTask, Proposal, ProposalState, TaskState
from signoff.resolvers.approval.proposals import PROPOSAL_ORDER
from signoff.resolvers.approval.tasks import TASK_ORDER
from signoff.resolvers.core.pagination import Equals, Matches, OneOf, Page, Where, paginate
from tests.helpers import GraphQLClient, build_world


async def _proposals_in_two_queues(gql: GraphQLClient) -> list[str]:
    queues = []
    for _ in range(2):
        world = await build_world(gql, required_approvals=2)
        for amount in range(3):
            await world.propose({"amount": amount + 1, "currency": "EUR"})
        first = (await world.propose({"amount": 9, "currency": "EUR"}))["proposal"]
        await world.decide(world.reviewers[0], first, "REJECTED")
        queues.append(world.queue_id)
    return queues


async def _walk(session: AsyncSession, where: list[Where], size: int) -> list[Any]:
    """Every page of the proposals ``where`` picks, ``size`` at a time."""
    seen: list[Any] = []
    after = None
    while True:
        page: Page[Proposal] = await paginate(
            session, Proposal, where, PROPOSAL_ORDER, first=size, after=after
        )
        seen.extend(page.items)
        if not page.has_next_page:
            return seen
        after = page.end_cursor


async def test_pages_hold_what_the_orm_finds_for_every_combination(
    engine: AsyncEngine, gql: GraphQLClient
) -> None:
    queues = await _proposals_in_two_queues(gql)
    on_postgres = engine.dialect.name == "postgresql"
    reads = create_sessionmaker(read_only(engine))
    combinations: list[tuple[list[Where], Any]] = [
        ([], True),
        ([OneOf(col(Proposal.queue_id), queues)], col(Proposal.queue_id).in_(queues)),
        ([OneOf(col(Proposal.queue_id), [])], False),
        (
            [OneOf(col(Proposal.queue_id), queues), Equals(col(Proposal.queue_id), queues[1])],
            Proposal.queue_id == queues[1],
        ),
        ([Equals(col(Proposal.state), ProposalState.REJECTED)], Proposal.state == "REJECTED"),
    ]
    cursors: list[Any] = []

    def note(_conn: Any, cursor: Any, *_: Any) -> None:
        cursors.append(cursor)

    for where, condition in combinations:
        async with create_sessionmaker(engine)() as session:
            expected = (
                await session.exec(
                    select(Proposal)
                    .where(condition)
                    .order_by(col(Proposal.created_at).desc(), col(Proposal.id).desc())
                )
            ).all()
        async with reads() as session:
            connection = await session.connection()
            if on_postgres:
                # Times come back in the connection's zone and cursors carry them.
                await connection.execute(text("SET TIME ZONE 'Pacific/Chatham'"))
            cursors.clear()
            event.listen(engine.sync_engine, "before_cursor_execute", note)
            try:
                for size in (1, 3, 100):
                    found = await _walk(session, where, size)
                    assert [p.id for p in found] == [p.id for p in expected], (where, size)
                    assert [p.created_at for p in found] == [p.created_at for p in expected]
            finally:
                event.remove(engine.sync_engine, "before_cursor_execute", note)
            if on_postgres:
                await connection.execute(text("RESET TIME ZONE"))
                assert cursors and all(isinstance(c, psycopg.AsyncCursor) for c in cursors)
        # A write session (not in autocommit) reads through SQLAlchemy: the same page.
        async with create_sessionmaker(engine)() as session:
            assert [p.id for p in await _walk(session, where, 2)] == [p.id for p in expected]


async def test_a_condition_of_its_own_takes_a_new_value_each_time(
    engine: AsyncEngine, gql: GraphQLClient
) -> None:
    """The tasks list's state condition compares with "now": one statement, each page
    with its own now (a claim lapses between two reads)."""
    world = await build_world(gql)
    await world.propose({"amount": 1, "currency": "EUR"})
    async with create_sessionmaker(engine)() as session:
        task = (await session.exec(select(HumanTask))).one()
        task.state = TaskState.CLAIMED
        task.claim_expires_at = clock.now() + timedelta(minutes=5)
        session.add(task)
        await session.commit()

    def claimed(now: Any) -> Any:
        return and_(col(HumanTask.state) == "CLAIMED", col(HumanTask.claim_expires_at) > now)

    def lapsed_or_open(now: Any) -> Any:
        return or_(
            col(HumanTask.state) == "OPEN",
            and_(col(HumanTask.state) == "CLAIMED", col(HumanTask.claim_expires_at) <= now),
        )

    async def count(build: Any, now: Any) -> int:
        where = [Matches(build.__name__, build, now)]
        async with create_sessionmaker(read_only(engine))() as session:
            page = await paginate(session, HumanTask, where, TASK_ORDER, first=10, after=None)
        return len(page.items)

    now = clock.now()
    later = now + timedelta(minutes=10)
    assert (await count(claimed, now), await count(lapsed_or_open, now)) == (1, 0)
    assert (await count(claimed, later), await count(lapsed_or_open, later)) == (0, 1)
