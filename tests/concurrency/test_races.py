"""State transitions under real concurrency: many requests at once, one winner.

These run against whichever database the suite uses; CI runs them on PostgreSQL,
where transactions truly interleave (SQLite serialises writers).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from sqlmodel import func, select

from signoff.models import Approval, AuditEvent, Role
from tests.helpers import CLAIM, DECIDE, GraphQLClient, build_world


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
