"""An approval authorises one execution: the decorator and ``execute`` against a real
``signoff serve`` (docs/design.md section 4.21)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest
from signoff_client import (
    AlreadyExecuted,
    Applied,
    Approved,
    Rejected,
    StillWaiting,
    execute,
    requires_approval,
)

from tests.client.conftest import Stage
from tests.client.test_client import PAYLOAD, agent, first_proposal, run_agent, target_name

ITS_OWN = "mutation($i: BeginExecutionInput!) { beginExecution(input: $i) { lease } }"


async def decide_when_proposed(stage: Stage, count: int, decision: str = "APPROVED") -> None:
    """Decide the ``count``-th proposal of the stage once it is made."""
    async with asyncio.timeout(20):
        while await stage.proposals_count() < count:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    nodes = await stage.gql(
        "query($q: ID) { proposals(queueId: $q) { nodes { id state } } }",
        {"q": stage.world.queue_id},
        stage.world.admin,
    )
    waiting = [n["id"] for n in nodes["proposals"]["nodes"] if n["state"] == "APPROVAL_REQUIRED"]
    await stage.decide(waiting[0], decision)


async def test_the_body_does_not_run_on_a_target_signoff_delivers(stage: Stage) -> None:
    ran: list[int] = []
    async with await agent(stage) as signoff:

        @requires_approval(target=stage.world.target_id, client=signoff, timeout=30)
        async def refund(amount: int, currency: str) -> str:
            ran.append(amount)
            return "refunded"

        deciding = asyncio.create_task(decide_when_proposed(stage, 1))
        outcome = await refund(120, "EUR")
        await deciding
    assert ran == []
    assert isinstance(outcome, Applied)
    assert [r.body["payload"] for r in stage.receiver.requests] == [PAYLOAD]


async def test_calling_again_is_a_new_proposal_not_the_old_approval(agent_stage: Stage) -> None:
    stage, ran = agent_stage, []
    async with await agent(stage) as signoff:

        @requires_approval(target=stage.world.target_id, client=signoff, timeout=5)
        async def refund(amount: int, currency: str) -> str:
            ran.append(amount)
            return f"refunded {amount} {currency}"

        deciding = asyncio.create_task(decide_when_proposed(stage, 1))
        assert await refund(120, "EUR") == "refunded 120 EUR"
        await deciding
        with pytest.raises(StillWaiting):  # a new proposal, waiting for its reviewer
            await refund(120, "EUR")
    assert ran == [120]
    assert await stage.proposals_count() == 2


async def test_a_keyed_call_replays_the_recorded_result(agent_stage: Stage) -> None:
    stage, ran = agent_stage, []
    async with await agent(stage) as signoff:

        @requires_approval(
            target=stage.world.target_id, client=signoff, timeout=20, key=lambda a, c: "t-1"
        )
        async def refund(amount: int, currency: str) -> dict[str, Any]:
            ran.append(amount)
            return {"refund_id": f"r-{amount}"}

        deciding = asyncio.create_task(decide_when_proposed(stage, 1))
        assert await refund(120, "EUR") == {"refund_id": "r-120"}
        await deciding
        assert await refund(120, "EUR") == {"refund_id": "r-120"}
    assert ran == [120]
    assert await stage.proposals_count() == 1


async def test_an_execution_taken_elsewhere_is_not_run_again(agent_stage: Stage) -> None:
    stage, ran = agent_stage, []
    async with await agent(stage) as signoff:
        proposal = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-1"})
        await stage.decide(proposal.id)
        assert isinstance(await proposal.wait(timeout=20), Approved)
        # Another process of the same agent took it first and has not reported yet.
        await stage.gql(
            ITS_OWN,
            {
                "i": {
                    "proposalId": proposal.id,
                    "payloadDigest": proposal.state.payload_digest,
                    "executor": "elsewhere:1",
                }
            },
            stage.world.agent,
        )
        with pytest.raises(AlreadyExecuted) as already:
            await execute(proposal, lambda **_: ran.append(1))
    assert already.value.state == "EXECUTING" and already.value.executor == "elsewhere:1"
    assert ran == []


async def test_execute_reports_a_failure_and_raises(agent_stage: Stage) -> None:
    stage = agent_stage
    async with await agent(stage) as signoff:
        proposal = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-3"})
        await stage.decide(proposal.id)

        def refund(amount: int, currency: str) -> None:
            raise ValueError("card declined")

        with pytest.raises(ValueError, match="card declined"):
            await signoff.execute(proposal, refund, timeout=20)
        read = await stage.gql(
            "query($id: ID!) { proposal(id: $id) { state lastErrorCode } }",
            {"id": proposal.id},
            stage.world.agent,
        )
        assert read["proposal"] == {"state": "FAILED", "lastErrorCode": "VALUE_ERROR"}
        with pytest.raises(AlreadyExecuted):
            await signoff.execute(proposal, refund)


async def test_wait_on_a_finished_proposal_returns_at_once(stage: Stage) -> None:
    async with await agent(stage) as signoff:
        proposal = await signoff.propose(stage.world.target_id, PAYLOAD, subject={"order": "o-4"})
        await stage.decide(proposal.id, "REJECTED", reason="Wrong customer.")
        rejected = await proposal.wait(timeout=20)
        assert isinstance(rejected, Rejected)
        async with asyncio.timeout(1):
            assert await proposal.wait() == rejected
            assert await proposal.wait(timeout=None) == rejected


async def test_ten_processes_run_the_body_once(agent_stage: Stage) -> None:
    stage = agent_stage
    target = await target_name(stage)
    agents = [await run_agent(stage, "decorated_agent.py", target, "ticket-10") for _ in range(10)]
    for process in agents:
        assert await asyncio.wait_for(process.stdout.readline(), 30)  # type: ignore[union-attr]
    await stage.decide(await first_proposal(stage))
    lines = []
    for process in agents:
        out, _ = await asyncio.wait_for(process.communicate(), 60)
        lines += [json.loads(line) for line in out.splitlines()]
        assert process.returncode == 0
    ran = [line for line in lines if "ran" in line]
    assert ran == [{"ran": PAYLOAD}]
    ends = Counter(json.dumps(line, sort_keys=True) for line in lines if "ran" not in line)
    assert sum(ends.values()) == 10, ends
    assert await stage.proposals_count() == 1
    assert (await stage.proposal(await first_proposal(stage)))["state"] == "APPLIED"


async def test_the_async_client_ends_without_a_word_on_stderr(agent_stage: Stage) -> None:
    stage = agent_stage
    process = await run_agent(
        stage, "async_agent.py", await target_name(stage), stderr=asyncio.subprocess.PIPE
    )
    await decide_when_proposed(stage, 1, "REJECTED")
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 30)
    assert json.loads(line) == {
        "result": f"Not done: the action was rejected by {stage.reviewer_name(0)}."
    }
    await decide_when_proposed(stage, 2)
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert [json.loads(x) for x in out.splitlines()][-1] == {"outcome": "approved"}
    assert err.decode() == ""
    assert process.returncode == 0
