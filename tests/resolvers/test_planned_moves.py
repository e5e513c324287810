"""A planned move (``Lifecycle.move_planned``: a decision's moves, compiled once and read
into records) answers as the reference ``Lifecycle.move`` with the same guard and values
does: the same rows, the same refusals, the same audit records and change events, whether
the session holds the row as an ORM instance or not."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select

from signoff import clock
from signoff.database import SessionMaker
from signoff.models import AuditEvent, ChangeEvent, HumanTask, Proposal, TaskState
from signoff.models.records import table_of
from signoff.models.task import workable_by
from signoff.resolvers.approval import approvals
from signoff.resolvers.approval.approvals import queue_if_reached
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import PROPOSAL, TASK
from signoff.resolvers.core.work import UnitOfWork
from tests.helpers import GraphQLClient, build_world

# What differs between two proposals made alike: their ids and what is derived from them.
UNLIKE = {"id", "payload_digest", "request_digest", "operation_key", "proposal_id", "context"}


def _reference_count(now: datetime, digest: str) -> tuple[Any, dict[str, Any]]:
    """The counting move as the decision wrote it through the ORM before it was planned."""
    count = col(Proposal.approval_count)
    reached = sa.and_(
        count + 1 >= col(Proposal.required_approvals),
        col(Proposal.awaiting_proposer).is_(False),
    )
    guard = sa.and_(col(Proposal.expires_at) > now, col(Proposal.payload_digest) == digest)
    return guard, {"approval_count": count + 1, **queue_if_reached(reached, now)}


def _columns(row: Any, model: type[Any]) -> dict[str, Any]:
    return {c.key: getattr(row, c.key) for c in table_of(model).columns if c.key not in UNLIKE}


async def _written(sessionmaker: SessionMaker, entity_id: str) -> list[tuple[Any, ...]]:
    """The audit records and change events of ``entity_id``, without their ids."""
    async with sessionmaker() as session:
        events = (
            await session.exec(select(ChangeEvent).where(ChangeEvent.entity_id == entity_id))
        ).all()
        audits = (
            await session.exec(select(AuditEvent).where(AuditEvent.target_id == entity_id))
        ).all()
    return sorted(
        [
            ("event", e.kind, e.entity_version, e.actor_id, sorted(e.snapshot.items()))
            for e in events
        ]
        + [("audit", a.action, a.actor_id, sorted(a.details)) for a in audits],
        key=repr,
    )


async def _two_alike(gql: GraphQLClient) -> tuple[list[str], list[dict[str, Any]]]:
    """Two proposals made alike (two approvals required), and the ids of two reviewers."""
    world = await build_world(gql, required_approvals=2)
    reviewers = [
        (await gql("{ viewer { actor { id } } }", {}, token))["viewer"]["actor"]["id"]
        for token in world.reviewers[:2]
    ]
    return reviewers, [(await world.propose())["proposal"] for _ in range(2)]


async def _task_of(sessionmaker: SessionMaker, proposal_id: str) -> HumanTask:
    async with sessionmaker() as session:
        return (
            await session.exec(select(HumanTask).where(HumanTask.proposal_id == proposal_id))
        ).one()


async def _count(
    sessionmaker: SessionMaker,
    proposal_id: str,
    digest: str,
    actor_id: str,
    *,
    planned: bool,
    loaded: bool = False,
) -> dict[str, Any] | None:
    now = clock.now()
    async with sessionmaker() as session:
        work = UnitOfWork(session)
        if loaded:
            assert await session.get(Proposal, proposal_id) is not None
        if planned:
            moved = await PROPOSAL.move_planned(
                work,
                lifecycles.COUNT_APPROVAL,
                proposal_id,
                approvals._APPROVE,
                {"now": now, "digest": digest},
                actor_id=actor_id,
                details={"approval_id": "a"},
            )
        else:
            guard, values = _reference_count(now, digest)
            moved = await PROPOSAL.move(
                work,
                lifecycles.COUNT_APPROVAL,
                proposal_id,
                actor_id=actor_id,
                guard=guard,
                values=values,
                details={"approval_id": "a"},
            )
        await work.commit()
    return None if moved is None else _columns(moved, Proposal)


async def _settle(
    sessionmaker: SessionMaker, task_id: str, actor_id: str, decided: bool, *, planned: bool
) -> dict[str, Any] | None:
    now = clock.now()
    response = {"decision": "APPROVED", "payloadDigest": "d"}
    async with sessionmaker() as session:
        work = UnitOfWork(session)
        edge = lifecycles.COMPLETE if decided else lifecycles.REOPEN
        if planned:
            parameters: dict[str, Any] = {"now": now, "decider": actor_id}
            if decided:
                parameters["response"] = response
            moved = await TASK.move_planned(
                work,
                edge,
                task_id,
                approvals._COMPLETE if decided else approvals._REOPEN,
                parameters,
                actor_id=actor_id,
            )
        else:
            values: dict[str, Any] = {"assignee_id": None, "claim_expires_at": None}
            if decided:
                values |= {"response": response, "completed_by_id": actor_id, "completed_at": now}
            moved = await TASK.move(
                work,
                edge,
                task_id,
                actor_id=actor_id,
                guard=workable_by(actor_id, now),
                values=values,
            )
        await work.commit()
    return None if moved is None else _columns(moved, HumanTask)


async def test_a_planned_count_answers_as_the_reference_move(
    gql: GraphQLClient, sessionmaker: SessionMaker, frozen_clock: clock.FrozenClock
) -> None:
    (actor, _), (ref, new) = await _two_alike(gql)
    for loaded in (False, True):  # the second approval reaches the quorum
        expected = await _count(sessionmaker, ref["id"], ref["payloadDigest"], actor, planned=False)
        got = await _count(
            sessionmaker, new["id"], new["payloadDigest"], actor, planned=True, loaded=loaded
        )
        assert got is not None and got == expected
    assert got is not None and got["state"] == "QUEUED"
    # A proposal no longer waiting, and a stale digest: neither moves.
    for digest_of in (lambda p: p["payloadDigest"], lambda _: "stale"):
        assert await _count(sessionmaker, ref["id"], digest_of(ref), actor, planned=False) is None
        assert await _count(sessionmaker, new["id"], digest_of(new), actor, planned=True) is None
    assert await _written(sessionmaker, ref["id"]) == await _written(sessionmaker, new["id"])


async def test_a_planned_settlement_answers_as_the_reference_move(
    gql: GraphQLClient, sessionmaker: SessionMaker, frozen_clock: clock.FrozenClock
) -> None:
    (actor, other), (ref, new) = await _two_alike(gql)
    tasks = [await _task_of(sessionmaker, p["id"]) for p in (ref, new)]
    for decided in (False, True):
        expected = await _settle(sessionmaker, tasks[0].id, actor, decided, planned=False)
        got = await _settle(sessionmaker, tasks[1].id, actor, decided, planned=True)
        assert got is not None and got == expected
    assert got is not None and got["state"] == TaskState.COMPLETED
    # A completed task settles no more, for anyone.
    assert await _settle(sessionmaker, tasks[0].id, other, True, planned=False) is None
    assert await _settle(sessionmaker, tasks[1].id, other, True, planned=True) is None
    written = [await _written(sessionmaker, t.id) for t in tasks]
    # Created, reopened, completed: an audit record and a change event each.
    assert written[0] == written[1] and len(written[0]) == 6
