"""signoff-client against a real ``signoff serve``: propose, follow the decision over
graphql-transport-ws (or by polling), and the delivery's end."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
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

from signoff.database import SessionMaker
from signoff.models import Proposal as ProposalRow
from tests.client.blocking_proxy import refusing_websockets
from tests.client.conftest import REFUND_ANSWER, Serve, Stage
from tests.conftest import checked_once
from tests.helpers import build_world
from tests.live import http_gql
from tests.receivers import Answer

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
        assert approved.payload == PAYLOAD and approved.approvers == [stage.reviewer_name(0)]
        applied = await proposal.wait(timeout=20)
        assert isinstance(applied, Applied)
        assert applied.result["statusCode"] == 200
        assert [r.body["payload"] for r in stage.receiver.requests] == [PAYLOAD]


RESULT = "query($id: ID!) { proposal(id: $id) { state result } }"


@checked_once
async def test_applied_carries_the_receivers_answer_when_the_target_has_an_output_schema(
    result_stage: Stage,
) -> None:
    stage = result_stage
    async with await agent(stage) as signoff:
        proposal = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-8"})
        await stage.decide(proposal.id)
        assert isinstance(await proposal.wait(timeout=20), Approved)
        applied = await proposal.wait(timeout=20)
        assert isinstance(applied, Applied)
        assert applied.result["body"] == REFUND_ANSWER
        assert applied.result["statusCode"] == 200 and applied.result["attempts"] == 1
        assert applied.result["responseDigest"].startswith("sha256:")
    found = await stage.gql(RESULT, {"id": proposal.id}, stage.world.agent)
    assert found["proposal"] == {"state": "APPLIED", "result": REFUND_ANSWER}


@checked_once
async def test_without_an_output_schema_the_answer_is_not_kept(stage: Stage) -> None:
    stage.receiver.script = [Answer(200, body=REFUND_ANSWER)]
    async with await agent(stage) as signoff:
        proposal = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-9"})
        await stage.decide(proposal.id)
        assert isinstance(await proposal.wait(timeout=20), Approved)
        applied = await proposal.wait(timeout=20)
        assert isinstance(applied, Applied)
        assert "body" not in applied.result and applied.result["statusCode"] == 200
    found = await stage.gql(RESULT, {"id": proposal.id}, stage.world.agent)
    assert found["proposal"] == {"state": "APPLIED", "result": None}


@checked_once
async def test_a_rejection_comes_with_its_reason(stage: Stage) -> None:
    async with await agent(stage) as signoff:
        proposal = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-2"})
        waiting = asyncio.create_task(proposal.wait(timeout=20))
        await asyncio.sleep(0.3)
        await stage.decide(proposal.id, "REJECTED", reason="Refund exceeds the order total")
        outcome = await waiting
        assert outcome == Rejected(
            proposal.id, "Refund exceeds the order total", stage.reviewer_name(0)
        )


@checked_once
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


@checked_once
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


@checked_once
async def test_a_payload_that_fails_the_schema_names_the_field(stage: Stage) -> None:
    async with await agent(stage) as signoff:
        with pytest.raises(PayloadSchemaInvalid) as refused:
            await signoff.propose(
                stage.world.target_id, {"amount": "lots", "currency": "EUR"}, subject={}
            )
        assert refused.value.code == "PAYLOAD_SCHEMA_INVALID"
        assert [p["pointer"] for p in refused.value.problems] == ["/amount"]


@checked_once
async def test_the_same_call_proposes_once(stage: Stage) -> None:
    async with await agent(stage) as signoff:
        first = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-5"})
        again = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-5"})
        assert not first.replayed and again.replayed and again.id == first.id
        assert await stage.proposals_count() == 1


async def test_a_server_restart_during_wait_loses_no_event(own_stage: Stage, serve: Serve) -> None:
    stage = own_stage
    async with await agent(stage) as signoff:
        proposal = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-6"})
        waiting = asyncio.create_task(proposal.wait(timeout=60))
        await asyncio.sleep(1)
        stage.server.stop()
        await asyncio.sleep(0.5)
        stage.server = await serve(
            SIGNOFF_PORT=str(stage.server.port),
            SIGNOFF_EMBEDDED_WORKER="1",
            SIGNOFF_ARQ_QUEUE=stage.queue,
        )
        await stage.decide(proposal.id)
        assert isinstance(await waiting, Approved)
        assert isinstance(await proposal.wait(timeout=30), Applied)
        kinds = [kind for _, kind in proposal.events]
        assert kinds.count("proposal.approved") == 1, kinds
        cursors = [cursor for cursor, _ in proposal.events]
        assert len(cursors) == len(set(cursors)), "no event twice"


@checked_once
async def test_rate_limited_requests_wait_the_retry_after(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve(SIGNOFF_RATE_LIMIT="4", SIGNOFF_RATE_LIMIT_BURST="4")
    retried: list[tuple[str, float]] = []
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1)
        async with AsyncSignoff(
            server.url, world.agent, on_retry=lambda e, d: retried.append((e.code, d))
        ) as signoff:
            proposal = await signoff.propose(world.target_id, PAYLOAD, subject={})
            # At once: asked one after another on a slow machine, they could come slower
            # than the bucket fills (4 a second) and never meet the limit.
            await asyncio.gather(*(proposal.refresh() for _ in range(8)))
    assert retried and {code for code, _ in retried} == {"RATE_LIMITED"}
    assert all(0 < delay <= 1 for _, delay in retried)


async def test_wait_follows_over_server_sent_events_when_websockets_are_refused(
    stage: Stage,
) -> None:
    async with (
        refusing_websockets(stage.server.port) as port,
        AsyncSignoff(f"http://127.0.0.1:{port}", stage.world.agent, poll_interval=60) as signoff,
    ):
        proposal = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-7"})
        # Decided once the client follows it: a proposal decided before its wait starts
        # is answered at once from its state, with no event to show how it was followed.
        before = await stage.server.live_subscriptions()
        following = asyncio.create_task(proposal.wait(timeout=20))
        await stage.server.subscriptions_live(before + 1)
        await stage.decide(proposal.id)
        assert isinstance(await following, Approved)
        assert isinstance(await proposal.wait(timeout=20), Applied)
    # Followed live (a poll would wait a minute and see no event): no poll, no websocket.
    assert not proposal.polling and signoff.api.over_sse
    assert "proposal.approved" in [kind for _, kind in proposal.events]


async def read_json(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 30)
    assert line, "the agent ended early"
    found: dict[str, Any] = json.loads(line)
    return found


async def run_agent(
    stage: Stage, script: str, *args: str, stderr: int | None = None
) -> asyncio.subprocess.Process:
    """One of the agent scripts beside this file, as the stage's agent."""
    env = {**os.environ, "SIGNOFF_URL": stage.server.url, "SIGNOFF_TOKEN": stage.world.agent}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__).parent / script),
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
    )


async def target_name(stage: Stage) -> str:
    async with await agent(stage) as signoff:
        return (await signoff.target(stage.world.target_id)).name


async def first_proposal(stage: Stage) -> str:
    """The id of the stage's one proposal, once there is one."""
    async with asyncio.timeout(20):
        while await stage.proposals_count() == 0:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    proposals = await stage.gql(
        "query($q: ID) { proposals(queueId: $q) { nodes { id } } }",
        {"q": stage.world.queue_id},
        stage.world.admin,
    )
    found: str = proposals["proposals"]["nodes"][0]["id"]
    return found


async def test_a_keyed_call_retried_after_a_crash_proposes_and_runs_once(
    agent_stage: Stage,
) -> None:
    stage = agent_stage
    target = await target_name(stage)
    first = await run_agent(stage, "decorated_agent.py", target, "ticket-7")
    assert await read_json(first) == {"started": True}
    await first_proposal(stage)
    first.kill()  # the agent crashes while it waits
    await first.communicate()

    again = await run_agent(stage, "decorated_agent.py", target, "ticket-7")
    assert await read_json(again) == {"started": True}
    proposal_id = await first_proposal(stage)
    await stage.decide(proposal_id)  # a reviewer, in another process than the agent
    assert await read_json(again) == {"ran": PAYLOAD}
    assert await read_json(again) == {"result": "refunded 120 EUR"}
    await asyncio.wait_for(again.communicate(), 10)
    assert again.returncode == 0
    assert await stage.proposals_count() == 1
    assert (await stage.proposal(proposal_id))["state"] == "APPLIED"

    # Run once more with the same key: the recorded result, and the body does not run.
    third = await run_agent(stage, "decorated_agent.py", target, "ticket-7")
    out, _ = await asyncio.wait_for(third.communicate(), 30)
    assert [json.loads(line) for line in out.splitlines()] == [
        {"started": True},
        {"result": "refunded 120 EUR"},
    ]
