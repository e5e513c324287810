"""Bulk decisions: independent items, each bound to its digest, one idempotent call."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlmodel import col, func, select

from signoff.models import Approval, AuditEvent
from signoff.resolvers.approval import bulk_decisions
from tests.helpers import GraphQLClient, World, build_world

DECIDE_MANY = """
mutation($input: DecideProposalsInput!) {
  decideProposals(input: $input) {
    bulkId replayed
    results { proposalId code message proposal { id state } approval { decision } }
  }
}
"""

PREVIEW = """
query($items: [BulkDecisionItemInput!]!) {
  bulkDecisionPreview(items: $items) {
    decidable refused
    items { proposalId code }
    byTarget { target { id } count summaryField summaryTotal }
    byState { state count }
  }
}
"""


def item(proposal: dict[str, Any], digest: str | None = None) -> dict[str, str]:
    return {"proposalId": proposal["id"], "payloadDigest": digest or proposal["payloadDigest"]}


def bulk(items: list[dict[str, str]], key: str = "bulk-1", **extra: Any) -> dict[str, Any]:
    return {"input": {"items": items, "decision": "APPROVED", "idempotencyKey": key, **extra}}


async def proposals_of(world: World, count: int) -> list[dict[str, Any]]:
    return [
        (await world.propose({"amount": 10 * (i + 1), "currency": "EUR"}))["proposal"]
        for i in range(count)
    ]


async def test_items_are_decided_independently(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=2)
    a, b, c, d = await proposals_of(world, 4)
    await world.decide(world.reviewers[1], c)  # already approved: no longer awaiting
    items = [item(a), item(b, "sha256:" + "0" * 64), item(c), item(d)]
    answer = (await gql(DECIDE_MANY, bulk(items, reason="Routine refunds."), world.reviewers[0]))[
        "decideProposals"
    ]
    assert answer["replayed"] is False
    results = answer["results"]
    assert [r["proposalId"] for r in results] == [a["id"], b["id"], c["id"], d["id"]]
    assert [r["code"] for r in results] == [
        None,
        "PAYLOAD_DIGEST_MISMATCH",
        "NOT_AWAITING_APPROVAL",
        None,
    ]
    assert results[0]["proposal"] == {"id": a["id"], "state": "QUEUED"}
    assert results[0]["approval"] == {"decision": "APPROVED"}
    assert results[1]["proposal"] is None and results[1]["message"]
    assert results[3]["proposal"]["state"] == "QUEUED"

    # Each item is audited as its own decision, naming the bulk action.
    async with gql.sessionmaker() as session:
        audits = (
            await session.exec(
                select(AuditEvent)
                .where(AuditEvent.action == "approval.approved")
                .order_by(col(AuditEvent.id))
            )
        ).all()
        summary = (
            await session.exec(select(AuditEvent).where(AuditEvent.action == "bulk_decision.made"))
        ).one()
    in_bulk = [e for e in audits if "bulk" in e.details]
    assert [e.target_id for e in in_bulk] == [a["id"], d["id"]]
    assert {e.details["bulk"]["id"] for e in in_bulk} == {answer["bulkId"]}
    assert [e.details["bulk"]["index"] for e in in_bulk] == [0, 3]
    assert summary.target_id == answer["bulkId"]
    assert summary.details["decided"] == 2 and summary.details["items"] == 4
    assert summary.details["refused"] == {
        "PAYLOAD_DIGEST_MISMATCH": 1,
        "NOT_AWAITING_APPROVAL": 1,
    }


async def test_the_whole_call_is_idempotent(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=1)
    a, b = await proposals_of(world, 2)
    items = [item(a), item(b, "sha256:" + "1" * 64)]
    first = (await gql(DECIDE_MANY, bulk(items), world.reviewers[0]))["decideProposals"]
    again = (await gql(DECIDE_MANY, bulk(items), world.reviewers[0]))["decideProposals"]
    assert again["replayed"] is True and again["bulkId"] == first["bulkId"]
    assert [r["code"] for r in again["results"]] == [r["code"] for r in first["results"]]
    async with gql.sessionmaker() as session:
        approvals = (await session.exec(select(func.count()).select_from(Approval))).one()
    assert approvals == 1
    other = await gql.error(DECIDE_MANY, bulk([item(a)]), world.reviewers[0])
    assert other.code == "IDEMPOTENCY_KEY_REUSED"


async def test_bulk_refusals_of_the_whole_call(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=1)
    (a,) = await proposals_of(world, 1)
    reviewer = world.reviewers[0]
    too_many = [item(a, f"sha256:{i:064x}") | {"proposalId": f"p-{i}"} for i in range(101)]
    assert (await gql.error(DECIDE_MANY, bulk(too_many), reviewer)).code == "VALIDATION_FAILED"
    assert (await gql.error(DECIDE_MANY, bulk([]), reviewer)).code == "VALIDATION_FAILED"
    twice = [item(a), item(a)]
    assert (await gql.error(DECIDE_MANY, bulk(twice), reviewer)).code == "VALIDATION_FAILED"
    assert (await gql.error(DECIDE_MANY, bulk([item(a)]), world.agent)).code == "FORBIDDEN"
    long_key = bulk([item(a)], key="k" * 151)
    assert (await gql.error(DECIDE_MANY, long_key, reviewer)).code == "VALIDATION_FAILED"


async def test_a_hundred_items_in_one_call(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=1)
    (a,) = await proposals_of(world, 1)
    missing = [{"proposalId": f"missing-{i}", "payloadDigest": "sha256:x"} for i in range(99)]
    answer = (await gql(DECIDE_MANY, bulk([item(a), *missing]), world.reviewers[0]))[
        "decideProposals"
    ]
    codes = [r["code"] for r in answer["results"]]
    assert codes[0] is None and set(codes[1:]) == {"NOT_FOUND"} and len(codes) == 100


async def test_the_preview_counts_sums_and_refusals(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=2, summaryField="amount")
    other = await build_world(gql, reviewers=0)  # another queue: the reviewer may not see it
    a, b, c = await proposals_of(world, 3)  # amounts 10, 20, 30
    await world.decide(world.reviewers[1], c)
    hidden = (await other.propose())["proposal"]
    items = [item(a), item(b), item(c), item(hidden)]
    preview = (await gql(PREVIEW, {"items": items}, world.reviewers[0]))["bulkDecisionPreview"]
    assert preview["decidable"] == 2 and preview["refused"] == 2
    assert [i["code"] for i in preview["items"]] == [
        None,
        None,
        "NOT_AWAITING_APPROVAL",
        "FORBIDDEN",
    ]
    assert preview["byTarget"] == [
        {
            "target": {"id": world.target_id},
            "count": 2,
            "summaryField": "amount",
            "summaryTotal": 30,
        }
    ]
    # Whole amounts add up to a whole number, not GraphQL Float's 30.0.
    assert json.dumps(preview["byTarget"][0]["summaryTotal"]) == "30"
    assert preview["byState"] == [
        {"state": "APPROVAL_REQUIRED", "count": 2},
        {"state": "QUEUED", "count": 1},
    ]
    # A preview changes nothing.
    async with gql.sessionmaker() as session:
        approvals = (await session.exec(select(func.count()).select_from(Approval))).one()
    assert approvals == 1


async def test_a_call_cut_short_and_sent_again_decides_only_what_it_had_not(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = await build_world(gql, reviewers=1)
    a, b = await proposals_of(world, 2)
    recorded = bulk_decisions.record

    def crash_after_the_items(*args: Any) -> Any:
        raise RuntimeError("the process died after committing the items")

    monkeypatch.setattr(bulk_decisions, "record", crash_after_the_items)
    cut = await gql.raw(DECIDE_MANY, bulk([item(a), item(b)]), world.reviewers[0])
    assert cut["errors"][0]["extensions"]["code"] == "INTERNAL"
    monkeypatch.setattr(bulk_decisions, "record", recorded)

    again = (await gql(DECIDE_MANY, bulk([item(a), item(b)]), world.reviewers[0]))[
        "decideProposals"
    ]
    assert [(r["code"], r["proposal"]["state"]) for r in again["results"]] == [
        (None, "QUEUED"),
        (None, "QUEUED"),
    ]
    async with gql.sessionmaker() as session:
        approvals = (await session.exec(select(func.count()).select_from(Approval))).one()
    assert approvals == 2
    other = await gql.raw(DECIDE_MANY, bulk([item(a)], decision="REJECTED"), world.reviewers[0])
    assert other["errors"][0]["extensions"]["code"] == "IDEMPOTENCY_KEY_REUSED"


async def test_the_preview_reports_a_revision_already_decided(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=1, required_approvals=2)
    (a,) = await proposals_of(world, 1)
    await world.decide(world.reviewers[0], a)
    preview = (await gql(PREVIEW, {"items": [item(a)]}, world.reviewers[0]))["bulkDecisionPreview"]
    assert [i["code"] for i in preview["items"]] == ["ALREADY_DECIDED"]
    decided = (await gql(DECIDE_MANY, bulk([item(a)]), world.reviewers[0]))["decideProposals"]
    assert [r["code"] for r in decided["results"]] == ["ALREADY_DECIDED"]
