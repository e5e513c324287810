"""The receiver's answer kept as the proposal's ``result``: only where the target declares
an output schema, only an answer that met it, from the attempt that applied the proposal,
and each proposal its own when a batch of outcomes is recorded together."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from signoff import clock
from signoff.constants import JSON_MAX_DEPTH
from signoff.delivery import send
from signoff.resolvers.delivery.claims import claim_deliveries
from signoff.resolvers.delivery.outcomes import Attempted, record_outcomes
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import RETRY, approved
from tests.receivers import Answer, Receiver, serve

SCHEMA = {
    "type": "object",
    "required": ["refund_id"],
    "properties": {"refund_id": {"type": "string"}},
}
STATE = """
query($id: ID!) { proposal(id: $id) {
  state deliveryTerminal lastErrorCode result attempts { responseClass responseDigest }
} }
"""


def nested(depth: int) -> list[Any]:
    """A list inside a list ``depth`` deep."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


async def state_of(world: World, proposal_id: str) -> dict[str, Any]:
    found: dict[str, Any] = (await world.gql(STATE, {"id": proposal_id}, world.admin))["proposal"]
    return found


async def test_an_answer_meeting_the_output_schema_is_the_proposals_result(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver([Answer(201, body={"refund_id": "r-1"})])) as receiver:
        world = await build_world(gql, url=receiver.url, output_schema=SCHEMA)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "APPLIED"
    state = await state_of(world, proposal["id"])
    assert state["state"] == "APPLIED" and state["result"] == {"refund_id": "r-1"}


async def test_without_an_output_schema_a_json_answer_is_not_kept(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver([Answer(200, body={"refund_id": "r-1"})])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "APPLIED"
    state = await state_of(world, proposal["id"])
    assert state["state"] == "APPLIED" and state["result"] is None
    assert state["attempts"][0]["responseDigest"].startswith("sha256:")


@pytest.mark.parametrize("body", [["r-1", 2], "r-1", 2**60, 2.5, False])
async def test_an_answer_of_any_json_type_is_kept_as_it_came(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock, body: Any
) -> None:
    async with serve(Receiver([Answer(200, body=body)])) as receiver:
        world = await build_world(gql, url=receiver.url, output_schema={"not": {"type": "null"}})
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "APPLIED"
    assert (await state_of(world, proposal["id"]))["result"] == body


@pytest.mark.parametrize(
    "body",
    [
        {"refund": 7},  # breaks the schema
        {"refund_id": "r-\x00"},  # meets it, but holds U+0000, which no database stores
        {"refund_id": "r-1", "rate": float("nan")},  # NaN is not JSON
        {"refund_id": "r-1", "deep": nested(JSON_MAX_DEPTH + 1)},  # nested past the limit
    ],
    ids=["breaks", "nul", "nan", "deep"],
)
async def test_an_answer_signoff_cannot_keep_is_terminal_and_keeps_nothing(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock, body: Any
) -> None:
    async with serve(Receiver([Answer(200, body=body)])) as receiver:
        world = await build_world(gql, url=receiver.url, output_schema=SCHEMA)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "FAILED"
    state = await state_of(world, proposal["id"])
    assert state["deliveryTerminal"] is True
    assert state["lastErrorCode"] == "RESPONSE_SCHEMA_INVALID"
    assert state["result"] is None


async def test_a_retried_delivery_keeps_the_answer_of_the_attempt_that_applied(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    """The first answer breaks the schema (terminal, nothing kept); an operator retries,
    and the attempt that applies stores its own answer."""
    script = [Answer(200, body={"refund": 7}), Answer(200, body={"refund_id": "r-2"})]
    async with serve(Receiver(script)) as receiver:
        world = await build_world(gql, url=receiver.url, output_schema=SCHEMA)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "FAILED"
        assert (await state_of(world, proposal["id"]))["result"] is None
        given = {"proposalId": proposal["id"], "payloadDigest": proposal["payloadDigest"]}
        await gql(RETRY, {"input": given}, world.admin)
        assert await worker.deliver(proposal["id"]) == "APPLIED"
    state = await state_of(world, proposal["id"])
    assert state["result"] == {"refund_id": "r-2"}
    assert [a["responseClass"] for a in state["attempts"]] == ["TERMINAL", "APPLIED"]


async def test_a_batch_of_outcomes_keeps_each_proposals_own_answer(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    """Outcomes recorded in one transaction, as a dispatcher's flush records them: applied
    attempts of a target without an output schema share one statement, and each of the
    target with one stores the answer its receiver gave it."""
    echoing = Receiver([Answer(200, body=lambda request: {"refund_id": request["action_id"]})])
    plain = Receiver([Answer(200, body={"refund_id": "not kept"})])
    async with serve(echoing), serve(plain):
        kept = await build_world(gql, url=echoing.url, output_schema=SCHEMA, reviewer_names="kept")
        echoing.secret = kept.signing_secret
        other = await build_world(gql, url=plain.url, reviewer_names="plain")
        plain.secret = other.signing_secret
        with_result = [(await approved(kept))["id"] for _ in range(3)]
        without = [(await approved(other))["id"] for _ in range(2)]
        async with worker.services.work() as work:
            claim = await claim_deliveries(work, limit=10, lease_seconds=60)
        assert len(claim.deliveries) == 5
        outcomes = await asyncio.gather(
            *(
                send(
                    worker.services.http,
                    d.proposal,
                    d.target,
                    d.secret,
                    d.proposal.delivery_attempt_count,
                )
                for d in claim.deliveries
            )
        )
        async with worker.services.work() as work:
            states = await record_outcomes(
                work,
                [
                    Attempted(d.proposal, d.target, outcome)
                    for d, outcome in zip(claim.deliveries, outcomes, strict=True)
                ],
            )
    assert [s.value if s else None for s in states] == ["APPLIED"] * 5
    for proposal_id in with_result:
        assert (await state_of(kept, proposal_id))["result"] == {"refund_id": proposal_id}
    for proposal_id in without:
        assert (await state_of(other, proposal_id))["result"] is None
