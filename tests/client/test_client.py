"""signoff-client against a real ``signoff serve``: propose, follow the decision over
graphql-transport-ws (or by polling), and the delivery's end."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from signoff_client import (
    Amended,
    Applied,
    Approved,
    AsyncSignoff,
    Expired,
    PayloadSchemaInvalid,
    Rejected,
    StillWaiting,
)
from sqlmodel import col, update

from signoff.models import Proposal as ProposalRow
from tests.client.conftest import Stage

PAYLOAD = {"amount": 120, "currency": "EUR"}


async def agent(stage: Stage, **options: Any) -> AsyncSignoff:
    return AsyncSignoff(stage.server.url, stage.world.agent, **options)


async def test_wait_returns_approved_then_applied(stage: Stage) -> None:
    async with await agent(stage) as signoff:
        proposal = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-1"})
        with pytest.raises(StillWaiting) as still:
            await proposal.wait(timeout=0.5)
        assert still.value.proposal_id == proposal.id
        await stage.decide(proposal.id)
        approved = await proposal.wait(timeout=20)
        assert isinstance(approved, Approved)
        assert approved.payload == PAYLOAD and approved.approvers == ["reviewer-0"]
        applied = await proposal.wait(timeout=20)
        assert isinstance(applied, Applied)
        assert applied.result["statusCode"] == 200
        assert [r.body["payload"] for r in stage.receiver.requests] == [PAYLOAD]


async def test_a_rejection_comes_with_its_reason(stage: Stage) -> None:
    async with await agent(stage) as signoff:
        proposal = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-2"})
        waiting = asyncio.create_task(proposal.wait(timeout=20))
        await asyncio.sleep(0.3)
        await stage.decide(proposal.id, "REJECTED", reason="Refund exceeds the order total")
        outcome = await waiting
        assert outcome == Rejected(proposal.id, "Refund exceeds the order total", "reviewer-0")


async def test_an_amendment_is_accepted_then_approved_as_amended(stage: Stage) -> None:
    async with await agent(stage) as signoff:
        proposal = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-3"})
        made = await stage.proposal(proposal.id)
        await stage.gql(
            "mutation($input: AmendProposalInput!) { amendProposal(input: $input) { replayed } }",
            {
                "input": {
                    "proposalId": proposal.id,
                    "basedOnDigest": made["payloadDigest"],
                    "reason": "Only the train fare",
                    "patch": {"amount": 90},
                }
            },
            stage.world.reviewers[0],
        )
        amended = await proposal.wait(timeout=20)
        assert isinstance(amended, Amended)
        assert amended.payload == {"amount": 90, "currency": "EUR"}
        assert amended.revision == 2 and amended.reason == "Only the train fare"
        await proposal.accept_amendment(amended.payload_digest)
        await stage.world.decide(stage.world.reviewers[1], await stage.proposal(proposal.id))
        approved = await proposal.wait(timeout=20)
        assert isinstance(approved, Approved) and approved.payload == amended.payload
        assert isinstance(await proposal.wait(timeout=20), Applied)
        assert [r.body["payload"] for r in stage.receiver.requests] == [amended.payload]


async def test_an_expired_proposal_says_so(stage: Stage) -> None:
    async with await agent(stage) as signoff:
        proposal = await signoff.propose(
            stage.world.target_id, PAYLOAD, subject={"order": "o-4"}, expires_in=60
        )
        # The deadline moved into the past, as an hour's wait would: the server's sweep
        # (every second here) expires it.
        async with stage.gql.sessionmaker() as session:
            past = datetime.now(UTC) - timedelta(minutes=1)
            await session.exec(
                update(ProposalRow)
                .where(col(ProposalRow.id) == proposal.id)
                .values(expires_at=past)
            )
            await session.commit()
        outcome = await proposal.wait(timeout=30)
        assert isinstance(outcome, Expired)


async def test_a_payload_that_fails_the_schema_names_the_field(stage: Stage) -> None:
    async with await agent(stage) as signoff:
        with pytest.raises(PayloadSchemaInvalid) as refused:
            await signoff.propose(
                stage.world.target_id, {"amount": "lots", "currency": "EUR"}, subject={}
            )
        assert refused.value.code == "PAYLOAD_SCHEMA_INVALID"
        assert [p["pointer"] for p in refused.value.problems] == ["/amount"]


async def test_the_same_call_proposes_once(stage: Stage) -> None:
    async with await agent(stage) as signoff:
        first = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-5"})
        again = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-5"})
        assert not first.replayed and again.replayed and again.id == first.id
        assert await stage.proposals_count() == 1
