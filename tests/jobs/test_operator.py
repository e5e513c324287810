"""Operator repairs: retryProposal and proposeCompensation."""

from __future__ import annotations

import asyncio
from typing import Any

from signoff import clock
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import RETRY, approved, read
from tests.receivers import Answer, Receiver, serve

COMPENSATE = """
mutation($input: ProposeCompensationInput!) {
  proposeCompensation(input: $input) {
    replayed proposal { id state compensatesProposalId payloadDigest } task { id state }
  }
}
"""


async def failed_terminally(
    gql: GraphQLClient, worker: Worker, status: int = 400
) -> tuple[World, dict[str, Any]]:
    async with serve(Receiver([Answer(status)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) in {"FAILED", "APPLIED"}
    return world, proposal


def retry(proposal: dict[str, Any], key: str | None = "k-1", **extra: Any) -> dict[str, Any]:
    return {
        "input": {
            "proposalId": proposal["id"],
            "payloadDigest": proposal["payloadDigest"],
            "idempotencyKey": key,
            **extra,
        }
    }


async def test_retry_is_for_terminal_failures_with_the_exact_digest(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    world, proposal = await failed_terminally(gql, worker)
    mismatch = await gql.error(RETRY, retry(proposal, payloadDigest="sha256:00"), world.admin)
    assert mismatch.code == "RETRY_DIGEST_MISMATCH"
    forbidden = await gql.error(RETRY, retry(proposal), world.agent)
    assert forbidden.code == "FORBIDDEN"

    first = (await gql(RETRY, retry(proposal), world.admin))["retryProposal"]
    assert first["replayed"] is False and first["proposal"]["state"] == "QUEUED"
    replay = (await gql(RETRY, retry(proposal), world.admin))["retryProposal"]
    assert replay["replayed"] is True
    again = await gql.error(RETRY, retry(proposal, key="k-2"), world.admin)
    assert again.code == "NOT_RETRYABLE"
    state = await read(world, proposal["id"])
    assert state["deliveryTerminal"] is False and state["lastErrorCode"] is None


async def test_concurrent_retries_queue_once(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    world, proposal = await failed_terminally(gql, worker)
    answers = await asyncio.gather(
        *(gql.raw(RETRY, retry(proposal, key=f"k-{i}"), world.admin) for i in range(6))
    )
    codes = sorted(
        a["errors"][0]["extensions"]["code"] if a.get("errors") else "OK" for a in answers
    )
    assert codes == ["NOT_RETRYABLE"] * 5 + ["OK"]


async def test_an_applied_action_can_be_compensated(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    world, proposal = await failed_terminally(gql, worker, 200)
    unavailable = await gql.error(
        COMPENSATE,
        {
            "input": {
                "proposalId": (await world.propose())["proposal"]["id"],
                "targetId": world.target_id,
                "actionCode": "refund.reverse",
                "payload": {"amount": 100, "currency": "EUR"},
                "idempotencyKey": "c-0",
            }
        },
        world.admin,
    )
    assert unavailable.code == "COMPENSATION_UNAVAILABLE"

    request = {
        "input": {
            "proposalId": proposal["id"],
            "targetId": world.target_id,
            "actionCode": "refund.reverse",
            "payload": {"amount": 100, "currency": "EUR"},
            "idempotencyKey": "c-1",
        }
    }
    made = (await gql(COMPENSATE, request, world.admin))["proposeCompensation"]
    assert made["replayed"] is False
    assert made["proposal"]["state"] == "APPROVAL_REQUIRED"
    assert made["proposal"]["compensatesProposalId"] == proposal["id"]
    assert made["task"]["state"] == "OPEN"
    assert (await read(world, proposal["id"]))["state"] == "COMPENSATION_REQUIRED"
    replay = (await gql(COMPENSATE, request, world.admin))["proposeCompensation"]
    assert replay["replayed"] is True and replay["proposal"]["id"] == made["proposal"]["id"]
    request["input"]["payload"] = {"amount": 5, "currency": "EUR"}
    reused = await gql.error(COMPENSATE, request, world.admin)
    assert reused.code == "IDEMPOTENCY_KEY_REUSED"

    decided = await world.decide(world.reviewers[0], made["proposal"])
    assert decided["proposal"]["state"] == "QUEUED"
