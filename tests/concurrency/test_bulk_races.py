"""Bulk decisions racing single decisions on the same proposals (PostgreSQL): each
proposal changes state once, and the two calls never both decide the last approval."""

from __future__ import annotations

import asyncio
from collections import Counter

from sqlmodel import col, func, select

from signoff.models import AuditEvent
from tests.concurrency.test_races import count, reviewers
from tests.conftest import requires_postgres
from tests.helpers import DECIDE, GraphQLClient, build_world
from tests.schema.test_bulk_decisions import DECIDE_MANY, bulk, item


@requires_postgres
async def test_a_bulk_decision_racing_single_decisions_moves_each_proposal_once(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql, reviewers=0)
    bulk_reviewer, *singles = await reviewers(gql, world.queue_slug, 4)
    proposals = [(await world.propose())["proposal"] for _ in range(12)]
    single_calls = [
        gql.raw(
            DECIDE,
            {
                "input": {
                    "proposalId": p["id"],
                    "decision": "REJECTED" if i % 2 else "APPROVED",
                    "payloadDigest": p["payloadDigest"],
                }
            },
            singles[i % len(singles)],
        )
        for i, p in enumerate(proposals)
    ]
    bulk_call = gql.raw(DECIDE_MANY, bulk([item(p) for p in proposals]), bulk_reviewer)
    bulk_body, *single_bodies = await asyncio.gather(bulk_call, *single_calls)

    results = bulk_body["data"]["decideProposals"]["results"]
    for proposal, result, single in zip(proposals, results, single_bodies, strict=True):
        # Exactly one of the two decided it; the other was refused as too late.
        won = [result["code"] is None, "errors" not in single]
        assert won.count(True) == 1, (result, single)
        lost = (
            result["code"]
            if single.get("errors") is None
            else single["errors"][0]["extensions"]["code"]
        )
        assert lost in {"NOT_AWAITING_APPROVAL", "TASK_CLAIMED_BY_OTHER"}, lost
        moved = (
            select(func.count())
            .select_from(AuditEvent)
            .where(
                AuditEvent.target_id == proposal["id"],
                col(AuditEvent.action).in_(["proposal.approved", "proposal.rejected"]),
            )
        )
        assert await count(gql, moved) == 1
    codes = Counter(r["code"] for r in results)
    assert sum(codes.values()) == len(proposals)
