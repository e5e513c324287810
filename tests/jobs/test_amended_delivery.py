"""Delivering an amended proposal: the body carries the approved revision, and approvals
of an earlier revision never make up its quorum."""

from __future__ import annotations

from sqlalchemy import update
from sqlmodel import col, select

from signoff import clock
from signoff.models import Actor, Approval, Decision, Proposal
from signoff.models.actor import person_of
from tests.helpers import GraphQLClient, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import read
from tests.receivers import Receiver, serve
from tests.schema.test_amendments import amend


async def test_the_delivered_body_names_the_approved_revision(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url, reviewers=3, required_approvals=2)
        receiver.secret = world.signing_secret
        proposal = (await world.propose())["proposal"]
        await world.decide(world.reviewers[0], proposal)
        amended = (await amend(world, world.reviewers[1], proposal, patch={"amount": 80}))[
            "proposal"
        ]
        await world.decide(world.reviewers[0], amended)  # not its amender
        queued = await world.decide(world.reviewers[2], amended)
        assert queued["proposal"]["state"] == "QUEUED"
        assert await worker.deliver(proposal["id"]) == "APPLIED"

    [request] = receiver.requests
    assert request.body["revision"] == 2
    assert request.body["payload"] == {"amount": 80, "currency": "EUR"}
    assert request.body["payload_digest"] == amended["payloadDigest"]
    assert (await read(world, proposal["id"]))["state"] == "APPLIED"


async def test_a_quorum_of_an_earlier_revision_is_refused_before_sending(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    """Defence in depth: were an amended proposal ever queued on the approvals of its
    earlier revision, the worker's check before sending refuses it, unsent."""
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url, reviewers=2)
        receiver.secret = world.signing_secret
        proposal = (await world.propose())["proposal"]
        await amend(world, world.reviewers[1], proposal, patch={"amount": 80})
        async with gql.sessionmaker() as session:
            stored = await session.get(Proposal, proposal["id"])
            assert stored is not None
            approver = (
                await session.exec(select(Actor.id).where(Actor.name == "reviewer-0"))
            ).one()
            session.add(
                Approval(
                    proposal_id=stored.id,
                    approver_id=approver,
                    person=person_of(approver, None),
                    decision=Decision.APPROVED,
                    payload_digest=proposal["payloadDigest"],
                    revision=1,
                )
            )
            await session.exec(
                update(Proposal)
                .where(col(Proposal.id) == stored.id)
                .values(state="QUEUED", approval_count=1, next_attempt_at=clock.now())
            )
            await session.commit()
        assert await worker.deliver(proposal["id"]) == "APPROVAL_DIGEST_MISMATCH"
    assert receiver.requests == []
    state = await read(world, proposal["id"])
    assert state["lastErrorCode"] == "APPROVAL_DIGEST_MISMATCH"
