"""State transitions under real concurrency: many requests at once, one winner.

These run against whichever database the suite uses; CI runs them on PostgreSQL,
where transactions truly interleave (SQLite serialises writers).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from sqlmodel import func, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.models import Approval, AuditEvent, HumanTask, IdempotencyRecord, Proposal, Role
from signoff.resolvers.approval import approvals
from tests.conftest import requires_postgres
from tests.helpers import CLAIM, COMPLETE, DECIDE, PROPOSE, GraphQLClient, build_world


async def codes_of(
    gql: GraphQLClient, calls: list[tuple[str, dict[str, Any], str]]
) -> Counter[str]:
    """Fire every call at once; count outcomes (``ok`` or the error code)."""
    bodies = await asyncio.gather(*(gql.raw(q, v, t) for q, v, t in calls))
    return Counter(
        b["errors"][0]["extensions"]["code"] if b.get("errors") else "ok" for b in bodies
    )


async def reviewers(gql: GraphQLClient, slug: str, count: int) -> list[str]:
    return [await gql.token(Role.REVIEWER, name=f"racer-{i}", queues=[slug]) for i in range(count)]


async def count(gql: GraphQLClient, stmt: Any) -> int:
    async with gql.sessionmaker() as session:
        return int((await session.exec(stmt)).one())


async def test_fifty_concurrent_decisions_one_wins(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=0)
    proposal = (await world.propose())["proposal"]
    racers = await reviewers(gql, world.queue_slug, 50)
    outcome = await codes_of(
        gql,
        [
            (
                DECIDE,
                {
                    "input": {
                        "proposalId": proposal["id"],
                        "decision": "APPROVED",
                        "payloadDigest": proposal["payloadDigest"],
                    }
                },
                r,
            )
            for r in racers
        ],
    )
    assert outcome == Counter({"ok": 1, "NOT_AWAITING_APPROVAL": 49})
    approvals = (
        select(func.count()).select_from(Approval).where(Approval.proposal_id == proposal["id"])
    )
    assert await count(gql, approvals) == 1
    approved = (
        select(func.count())
        .select_from(AuditEvent)
        .where(AuditEvent.action == "proposal.approved", AuditEvent.target_id == proposal["id"])
    )
    assert await count(gql, approved) == 1


async def test_ten_reviewers_racing_a_quorum_of_two(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=0, required_approvals=2)
    proposal = (await world.propose())["proposal"]
    racers = await reviewers(gql, world.queue_slug, 10)
    outcome = await codes_of(
        gql,
        [
            (
                DECIDE,
                {
                    "input": {
                        "proposalId": proposal["id"],
                        "decision": "APPROVED",
                        "payloadDigest": proposal["payloadDigest"],
                    }
                },
                r,
            )
            for r in racers
        ],
    )
    assert outcome == Counter({"ok": 2, "NOT_AWAITING_APPROVAL": 8})
    state = await gql(
        "query($id: ID!) { proposal(id: $id) { state approvalCount approvals { id } } }",
        {"id": proposal["id"]},
        world.admin,
    )
    assert state["proposal"]["state"] == "QUEUED"
    assert state["proposal"]["approvalCount"] == 2
    assert len(state["proposal"]["approvals"]) == 2
    approved = (
        select(func.count())
        .select_from(AuditEvent)
        .where(AuditEvent.action == "proposal.approved", AuditEvent.target_id == proposal["id"])
    )
    assert await count(gql, approved) == 1


async def test_one_reviewer_deciding_twice_at_once_counts_once(gql: GraphQLClient) -> None:
    world = await build_world(gql, required_approvals=2)
    proposal = (await world.propose())["proposal"]
    reviewer = world.reviewers[0]
    outcome = await codes_of(
        gql,
        [
            (
                DECIDE,
                {
                    "input": {
                        "proposalId": proposal["id"],
                        "decision": "APPROVED",
                        "payloadDigest": proposal["payloadDigest"],
                    }
                },
                reviewer,
            )
        ]
        * 10,
    )
    assert outcome == Counter({"ok": 1, "ALREADY_DECIDED": 9})
    state = await gql(
        "query($id: ID!) { proposal(id: $id) { state approvalCount } }",
        {"id": proposal["id"]},
        world.admin,
    )
    assert state["proposal"] == {"state": "APPROVAL_REQUIRED", "approvalCount": 1}


async def test_fifty_concurrent_claims_one_wins(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=0)
    task_id = (await world.propose())["task"]["id"]
    racers = await reviewers(gql, world.queue_slug, 50)
    outcome = await codes_of(gql, [(CLAIM, {"id": task_id}, r) for r in racers])
    assert outcome == Counter({"ok": 1, "TASK_CLAIMED_BY_OTHER": 49})
    claims = (
        select(func.count())
        .select_from(AuditEvent)
        .where(AuditEvent.action == "task.claimed", AuditEvent.target_id == task_id)
    )
    assert await count(gql, claims) == 1


async def _claimed_task(gql: GraphQLClient, task_id: str) -> tuple[str, str | None]:
    async with gql.sessionmaker() as session:
        task = await session.get(HumanTask, task_id)
        assert task is not None
        return str(task.state), task.assignee_id


@requires_postgres
async def test_a_decision_through_the_task_never_overwrites_a_claim_taken_meanwhile(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reviewer A completes an approval task (a decision short of the quorum, which would
    reopen it); reviewer B claims the task after A's request has read it and before A
    settles it. B's claim stands and A's decision is refused, leaving nothing behind.
    (PostgreSQL: on SQLite A's write transaction would keep B waiting.)"""
    world = await build_world(gql, reviewers=0, required_approvals=2)
    a, b = await reviewers(gql, world.queue_slug, 2)
    actor_b = (await gql("{ viewer { actor { id } } }", {}, b))["viewer"]["actor"]["id"]
    proposed = await world.propose()
    task_id = proposed["task"]["id"]
    claims: list[dict[str, Any]] = []
    read_task = approvals.approval_task

    async def read_then_let_b_claim(session: AsyncSession, proposal_id: str) -> HumanTask | None:
        task = await read_task(session, proposal_id)
        if not claims:
            claims.append(await gql.raw(CLAIM, {"id": task_id}, b))
        return task

    monkeypatch.setattr(approvals, "approval_task", read_then_let_b_claim)
    response = {"decision": "APPROVED", "payloadDigest": proposed["proposal"]["payloadDigest"]}
    decide = {"input": {"taskId": task_id, "response": response}}
    decided = await gql.raw(COMPLETE, decide, a)
    assert "errors" not in claims[0], claims[0]
    assert decided["errors"][0]["extensions"]["code"] == "TASK_CLAIMED_BY_OTHER", decided
    assert await _claimed_task(gql, task_id) == ("CLAIMED", actor_b)
    recorded = (
        select(func.count())
        .select_from(Approval)
        .where(Approval.proposal_id == proposed["proposal"]["id"])
    )
    assert await count(gql, recorded) == 0


async def test_twenty_retries_of_one_proposal_at_once_make_one(gql: GraphQLClient) -> None:
    """An agent's retries racing its first call under one operation key: one proposal,
    one task, one idempotency record; every other call answers as its replay."""
    world = await build_world(gql, reviewers=0)
    given = {
        "targetId": world.target_id,
        "actionCode": "refund.create",
        "subject": {"order": "o-1"},
        "payload": {"amount": 100, "currency": "EUR"},
        "operationKey": "refund-retried",
    }
    bodies = await asyncio.gather(
        *(gql.raw(PROPOSE, {"input": given}, world.agent) for _ in range(20))
    )
    assert [b.get("errors") for b in bodies] == [None] * 20
    answers = [b["data"]["proposeAction"] for b in bodies]
    assert Counter(a["replayed"] for a in answers) == Counter({False: 1, True: 19})
    assert len({(a["proposal"]["id"], a["task"]["id"]) for a in answers}) == 1
    made = (
        select(func.count()).select_from(Proposal).where(Proposal.operation_key == "refund-retried")
    )
    assert await count(gql, made) == 1
    tasks = select(func.count()).select_from(HumanTask).where(HumanTask.queue_id == world.queue_id)
    assert await count(gql, tasks) == 1
    keyed = (
        select(func.count())
        .select_from(IdempotencyRecord)
        .where(IdempotencyRecord.key == "refund-retried")
    )
    assert await count(gql, keyed) == 1
