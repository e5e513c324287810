"""Deadline policies, driven by a frozen clock: expire, reject with a reason, escalate
along a chain (docs/design.md section 4.17)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlmodel import col, select

from signoff import clock
from signoff.jobs.delivery import expire_due_proposals
from signoff.models import AuditEvent, RepairAction, Role
from signoff.resolvers.delivery.reconciliation import reconcile
from tests.helpers import (
    CLAIM,
    CREATE_QUEUE,
    DECIDE,
    PAYMENT_SCHEMA,
    PROPOSE,
    REGISTER_TARGET,
    GraphQLClient,
    World,
    build_world,
)
from tests.jobs.conftest import Worker
from tests.jobs.test_feed_events import feed

READ = """
query($id: ID!) {
  proposal(id: $id) {
    state payloadDigest expiresAt escalationLevel approvalCount
    queue { id }
    deadlinePolicy { action reason escalation { deadlineSeconds queue { id } } }
    task { id state assignee { name } queue { id } context }
  }
}
"""


async def queue(gql: GraphQLClient, admin: str) -> tuple[str, str]:
    """A new queue and a reviewer of it."""
    slug = f"q-{uuid.uuid4().hex[:8]}"
    created = await gql(CREATE_QUEUE, {"input": {"slug": slug, "name": slug}}, admin)
    reviewer = await gql.token(Role.REVIEWER, name=f"rev-{slug}", queues=[slug])
    return created["createQueue"]["id"], reviewer


async def escalating_world(
    gql: GraphQLClient, steps: int = 2, **target: Any
) -> tuple[World, list[tuple[str, str]]]:
    """A target whose deadline escalates through ``steps`` new queues, 600 s each."""
    admin = await gql.token(Role.ADMIN, name="chain-admin")
    chain = [await queue(gql, admin) for _ in range(steps)]
    policy = {
        "action": "ESCALATE",
        "escalation": [{"queueId": q, "deadlineSeconds": 600} for q, _ in chain],
    }
    return await build_world(gql, deadlinePolicy=policy, **target), chain


async def read(world: World, proposal_id: str) -> dict[str, Any]:
    data = await world.gql(READ, {"id": proposal_id}, world.admin)
    result: dict[str, Any] = data["proposal"]
    return result


async def audit(worker: Worker, entity_id: str) -> list[str]:
    async with worker.services.sessionmaker() as session:
        rows = await session.exec(
            select(AuditEvent.action)
            .where(AuditEvent.target_id == entity_id)
            .order_by(col(AuditEvent.created_at), col(AuditEvent.id))
        )
        return list(rows.all())


def decide(proposal_id: str, digest: str) -> dict[str, Any]:
    return {"input": {"proposalId": proposal_id, "decision": "APPROVED", "payloadDigest": digest}}


async def test_a_deadline_escalates_along_the_chain_then_expires(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    world, chain = await escalating_world(gql)
    proposed = await world.propose(expiresInSeconds=60)
    proposal, task = proposed["proposal"], proposed["task"]
    await gql(CLAIM, {"id": task["id"]}, world.reviewers[0])

    frozen_clock.advance(59)
    assert await expire_due_proposals(worker.ctx) == 0
    frozen_clock.advance(1)
    assert await expire_due_proposals(worker.ctx) == 1
    first = await read(world, proposal["id"])
    assert first["state"] == "APPROVAL_REQUIRED"
    assert first["escalationLevel"] == 1
    assert first["queue"]["id"] == chain[0][0]
    assert first["expiresAt"] == (frozen_clock.current + timedelta(seconds=600)).strftime(
        "%Y-%m-%dT%H:%M:%S+00:00"
    )
    # The deadline is part of the digest: it changed, and the task shows the new one.
    assert first["payloadDigest"] != proposal["payloadDigest"]
    assert first["task"]["state"] == "OPEN" and first["task"]["assignee"] is None
    assert first["task"]["queue"]["id"] == chain[0][0]
    assert first["task"]["context"]["payloadDigest"] == first["payloadDigest"]
    assert first["task"]["context"]["escalationLevel"] == 1

    # The first queue's reviewers no longer see it; the second's do, with the new digest.
    refused = await gql.error(
        DECIDE, decide(proposal["id"], first["payloadDigest"]), world.reviewers[0]
    )
    assert refused.code == "FORBIDDEN"
    stale = await gql.error(DECIDE, decide(proposal["id"], proposal["payloadDigest"]), chain[0][1])
    assert stale.code == "PAYLOAD_DIGEST_MISMATCH"

    frozen_clock.advance(600)
    assert await expire_due_proposals(worker.ctx) == 1
    second = await read(world, proposal["id"])
    assert (second["escalationLevel"], second["queue"]["id"]) == (2, chain[1][0])

    frozen_clock.advance(600)
    assert await expire_due_proposals(worker.ctx) == 1  # past the chain's end: expired
    assert await expire_due_proposals(worker.ctx) == 0
    last = await read(world, proposal["id"])
    assert (last["state"], last["task"]["state"]) == ("CANCELLED", "EXPIRED")

    # Each escalation is published to the queue it enters and, so that its reviewers see
    # it go, to the queue it leaves: the same kind, about the same version.
    start, first_q, second_q = world.queue_id, chain[0][0], chain[1][0]
    assert [(e.kind, e.queue_id) for e in await feed(worker, proposal["id"])] == [
        ("proposal.proposed", start),
        ("proposal.escalated", first_q),
        ("proposal.escalated", start),
        ("proposal.escalated", second_q),
        ("proposal.escalated", first_q),
        ("proposal.expired", second_q),
    ]
    assert [(e.kind, e.queue_id) for e in await feed(worker, task["id"])] == [
        ("task.created", start),
        ("task.claimed", start),
        ("task.escalated", first_q),
        ("task.escalated", start),
        ("task.escalated", second_q),
        ("task.escalated", first_q),
        ("task.expired", second_q),
    ]
    assert (await audit(worker, proposal["id"]))[-3:] == [
        "proposal.escalated",
        "proposal.escalated",
        "proposal.expired",
    ]
    assert (await audit(worker, task["id"]))[-2:] == ["task.escalated", "task.escalated"]


async def test_an_escalated_proposal_is_decided_in_its_new_queue(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    world, chain = await escalating_world(gql, steps=1)
    proposal = (await world.propose(expiresInSeconds=60))["proposal"]
    frozen_clock.advance(60)
    assert await expire_due_proposals(worker.ctx) == 1
    escalated = await read(world, proposal["id"])
    decided = await gql(DECIDE, decide(proposal["id"], escalated["payloadDigest"]), chain[0][1])
    assert decided["decideProposal"]["proposal"]["state"] == "QUEUED"
    frozen_clock.advance(600)
    assert await expire_due_proposals(worker.ctx) == 0  # decided: the deadline does nothing


async def test_a_reject_policy_rejects_with_its_reason(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    reason = "Nobody reviewed it in time; propose it again."
    world = await build_world(gql, deadlinePolicy={"action": "REJECT", "reason": reason})
    proposal = (await world.propose(expiresInSeconds=60))["proposal"]
    frozen_clock.advance(60)
    assert await expire_due_proposals(worker.ctx) == 1
    rejected = await read(world, proposal["id"])
    assert (rejected["state"], rejected["task"]["state"]) == ("REJECTED", "EXPIRED")
    assert rejected["deadlinePolicy"] == {"action": "REJECT", "reason": reason, "escalation": []}
    assert [e.kind for e in await feed(worker, proposal["id"])][-1] == "proposal.rejected"
    async with worker.services.sessionmaker() as session:
        details = (
            await session.exec(
                select(AuditEvent.details).where(
                    AuditEvent.target_id == proposal["id"],
                    AuditEvent.action == "proposal.deadline_rejected",
                )
            )
        ).one()
    assert details == {"reason": reason}


async def test_a_proposal_overrides_its_targets_policy_within_bounds(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    world, chain = await escalating_world(gql, steps=2)
    beyond = await gql.error(
        *_propose(world, {"action": "ESCALATE", "escalationSteps": 3}), world.agent
    )
    assert beyond.code == "DEADLINE_POLICY_OUT_OF_BOUNDS"
    no_reason = await gql.error(*_propose(world, {"action": "REJECT"}), world.agent)
    assert no_reason.code == "VALIDATION_FAILED"

    shorter = (
        await world.propose(
            expiresInSeconds=60, deadlinePolicy={"action": "ESCALATE", "escalationSteps": 1}
        )
    )["proposal"]
    expiring = (await world.propose(expiresInSeconds=60, deadlinePolicy={"action": "EXPIRE"}))[
        "proposal"
    ]
    frozen_clock.advance(60)
    assert await expire_due_proposals(worker.ctx) == 2
    assert (await read(world, expiring["id"]))["state"] == "CANCELLED"
    escalated = await read(world, shorter["id"])
    assert escalated["deadlinePolicy"]["escalation"] == [
        {"deadlineSeconds": 600, "queue": {"id": chain[0][0]}}
    ]
    frozen_clock.advance(600)
    assert await expire_due_proposals(worker.ctx) == 1
    assert (await read(world, shorter["id"]))["state"] == "CANCELLED"

    plain = await build_world(gql)
    refused = await gql.error(*_propose(plain, {"action": "ESCALATE"}), plain.agent)
    assert refused.code == "DEADLINE_POLICY_OUT_OF_BOUNDS"


def _propose(world: World, policy: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return PROPOSE, {
        "input": {
            "targetId": world.target_id,
            "actionCode": "refund.create",
            "payload": {"amount": 1, "currency": "EUR"},
            "operationKey": uuid.uuid4().hex,
            "deadlinePolicy": policy,
        }
    }


async def test_a_targets_policy_is_checked_when_registered(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    cases = [
        ({"action": "REJECT"}, "VALIDATION_FAILED"),
        ({"action": "ESCALATE"}, "VALIDATION_FAILED"),
        (
            {
                "action": "EXPIRE",
                "escalation": [{"queueId": world.queue_id, "deadlineSeconds": 60}],
            },
            "VALIDATION_FAILED",
        ),
        (
            {
                "action": "ESCALATE",
                "escalation": [{"queueId": world.queue_id, "deadlineSeconds": 60}],
            },
            "VALIDATION_FAILED",
        ),
        (
            {
                "action": "ESCALATE",
                "escalation": [{"queueId": str(uuid.uuid4()), "deadlineSeconds": 60}],
            },
            "NOT_FOUND",
        ),
        (
            {"action": "ESCALATE", "escalation": [{"queueId": "x", "deadlineSeconds": 5}]},
            "NOT_FOUND",
        ),
    ]
    for policy, code in cases:
        with_policy = await _register(world, policy)
        assert with_policy == code, policy


async def _register(world: World, policy: dict[str, Any]) -> str:
    refused = await world.gql.error(
        REGISTER_TARGET,
        {
            "input": {
                "name": f"t-{uuid.uuid4().hex[:6]}",
                "url": "http://127.0.0.1:9/hook",
                "inputSchema": PAYMENT_SCHEMA,
                "queueId": world.queue_id,
                "deadlinePolicy": policy,
            }
        },
        world.admin,
    )
    return refused.code


async def test_reconciliation_applies_each_deadline_step_once(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    world, chain = await escalating_world(gql, steps=1)
    proposal = (await world.propose(expiresInSeconds=60))["proposal"]
    frozen_clock.advance(60)
    assert (await reconcile(worker.services.work)).run.repaired_count == 1
    assert (await reconcile(worker.services.work)).run.repaired_count == 0
    frozen_clock.advance(600)
    assert (await reconcile(worker.services.work)).run.repaired_count == 1
    async with worker.services.sessionmaker() as session:
        repairs = (
            await session.exec(select(RepairAction).order_by(col(RepairAction.created_at)))
        ).all()
    assert [(r.action_type, r.operation_key) for r in repairs] == [
        ("escalate_proposal", f"escalate_proposal:{proposal['id']}:1"),
        ("expire_proposal", f"expire_proposal:{proposal['id']}"),
    ]
    assert repairs[0].after["queueId"] == chain[0][0]
    assert (await read(world, proposal["id"]))["state"] == "CANCELLED"
