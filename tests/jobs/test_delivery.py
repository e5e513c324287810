"""Delivering approved actions to real HTTP receivers on loopback, one attempt at a time.

Each test calls the job function itself (as an arq worker would) and moves an injected
clock to make retries due: no sleeps.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import select

from signoff import clock
from signoff.database import create_sessionmaker
from signoff.digest import canonical_json
from signoff.evidence.sealing import Sealer, decode_key, new_key_text
from signoff.jobs.dispatcher import Dispatcher
from signoff.models import DeadLetter, DeliveryAttempt, Incident, IncidentState, Role
from signoff.resolvers.core.work import Services as WorkServices
from signoff.resolvers.core.work import WorkMaker
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.receivers import Answer, Receiver, serve

PROPOSAL = """
query($id: ID!) { proposal(id: $id) {
  id state operationKey payloadDigest deliveryAttemptCount deliveryTerminal nextAttemptAt
  lastErrorCode appliedAt
  attempts { attemptNumber responseClass statusCode errorCode requestDigest responseDigest
             durationMs }
} }
"""


async def approved(world: World, **extra: Any) -> dict[str, Any]:
    """Propose and approve; the proposal is QUEUED and due now."""
    proposal = (await world.propose(**extra))["proposal"]
    decided = await world.decide(world.reviewers[0], proposal)
    assert decided["proposal"]["state"] == "QUEUED"
    return proposal


async def read(world: World, proposal_id: str) -> dict[str, Any]:
    data = await world.gql(PROPOSAL, {"id": proposal_id}, world.admin)
    result: dict[str, Any] = data["proposal"]
    return result


async def test_receiver_answering_200_applies(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "APPLIED"

    [request] = receiver.requests
    assert request.webhook_id == f"msg_{proposal['id']}"
    assert request.body == {
        "schema_version": "1",
        "action_id": proposal["id"],
        "operation_key": proposal["operationKey"],
        "payload_digest": proposal["payloadDigest"],
        "revision": 1,
        "action_code": "refund.create",
        "subject": {"order": "o-1"},
        "payload": {"amount": 100, "currency": "EUR"},
        "preconditions": {},
    }
    assert request.headers["webhook-signature"].startswith("v1,")
    assert request.headers["content-type"] == "application/json"
    state = await read(world, proposal["id"])
    assert state["state"] == "APPLIED" and state["deliveryAttemptCount"] == 1
    assert state["deliveryTerminal"] is False and state["lastErrorCode"] is None
    [attempt] = state["attempts"]
    assert attempt["responseClass"] == "APPLIED" and attempt["statusCode"] == 200
    assert attempt["requestDigest"].startswith("sha256:")
    secret = world.signing_secret.removeprefix("whsec_")
    assert secret not in caplog.text
    async with worker.services.sessionmaker() as session:
        rows = (await session.exec(select(DeliveryAttempt))).all()
        assert rows and secret not in canonical_json([repr(row) for row in rows])


async def test_500_twice_then_200_applies_on_the_third_attempt_with_one_webhook_id(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    script = [Answer(500), Answer(503), Answer(200)]
    async with serve(Receiver(script)) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "FAILED"
        state = await read(world, proposal["id"])
        # Backoff 15 s x 2^(attempt-1); jitter pinned to its upper bound.
        assert state["lastErrorCode"] == "RECEIVER_ERROR"
        assert state["nextAttemptAt"] == _iso(clock.now() + timedelta(seconds=15))
        assert worker.jobs.enqueued[-1] == (
            f"deliver:{proposal['id']}:2",
            clock.now() + timedelta(seconds=15),
        )
        assert await worker.deliver(proposal["id"]) == "NOT_DUE"
        frozen_clock.advance(15)
        assert await worker.deliver(proposal["id"]) == "FAILED"
        assert (await read(world, proposal["id"]))["nextAttemptAt"] == _iso(
            clock.now() + timedelta(seconds=30)
        )
        frozen_clock.advance(30)
        assert await worker.deliver(proposal["id"]) == "APPLIED"

    assert [r.attempt for r in receiver.requests] == [1, 2, 3]
    assert {r.webhook_id for r in receiver.requests} == {f"msg_{proposal['id']}"}
    state = await read(world, proposal["id"])
    assert state["state"] == "APPLIED" and state["deliveryAttemptCount"] == 3
    assert [
        (a["attemptNumber"], a["responseClass"], a["statusCode"]) for a in state["attempts"]
    ] == [(1, "RETRYABLE", 500), (2, "RETRYABLE", 503), (3, "APPLIED", 200)]


async def test_a_failed_attempt_logs_a_warning_without_secret_or_payload(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with serve(Receiver([Answer(500), Answer(200)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world, payload={"amount": 4321, "currency": "EUR"})
        assert await worker.deliver(proposal["id"]) == "FAILED"
        frozen_clock.advance(300)
        assert await worker.deliver(proposal["id"]) == "APPLIED"
    lines = [r for r in caplog.records if r.getMessage().startswith("delivery proposal=")]
    assert [(r.levelno, r.getMessage().split(" class=")[1]) for r in lines] == [
        (logging.WARNING, "RETRYABLE code=RECEIVER_ERROR state=FAILED"),
        (logging.INFO, "APPLIED code=None state=APPLIED"),
    ]
    secret = world.signing_secret.removeprefix("whsec_")
    assert secret not in caplog.text and "4321" not in caplog.text


async def test_two_agents_with_one_operation_key_are_two_webhook_ids(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    """An operation key is unique only per agent: were it the webhook-id, a receiver that
    deduplicates on webhook-id would drop the second action while Signoff records it APPLIED."""
    async with serve(Receiver([Answer(500), Answer(200)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        other_agent = replace(world, agent=await gql.token(Role.AGENT))
        first = await approved(world, operation_key="refund-42")
        second = await approved(other_agent, operation_key="refund-42")
        assert first["id"] != second["id"]
        assert await worker.deliver(first["id"]) == "FAILED"  # the 500: retried below
        assert await worker.deliver(second["id"]) == "APPLIED"
        frozen_clock.advance(15)
        assert await worker.deliver(first["id"]) == "APPLIED"

    # Every request's signature verified (the receiver refuses any that does not).
    assert receiver.refused == 0 and len(receiver.requests) == 3
    assert {msg_id: body["action_id"] for msg_id, body in receiver.applied.items()} == {
        f"msg_{first['id']}": first["id"],
        f"msg_{second['id']}": second["id"],
    }
    assert {body["operation_key"] for body in receiver.applied.values()} == {"refund-42"}
    # The retry of the first proposal carried the same webhook-id as its first attempt.
    assert [(r.webhook_id, r.attempt) for r in receiver.requests] == [
        (f"msg_{first['id']}", 1),
        (f"msg_{second['id']}", 1),
        (f"msg_{first['id']}", 2),
    ]
    for proposal in (first, second):
        assert (await read(world, proposal["id"]))["state"] == "APPLIED"


async def test_429_with_retry_after_is_honoured(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    script = [Answer(429, headers={"retry-after": "120"}), Answer(200)]
    async with serve(Receiver(script)) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "FAILED"
        state = await read(world, proposal["id"])
        assert state["lastErrorCode"] == "RATE_LIMITED"
        assert state["nextAttemptAt"] == _iso(clock.now() + timedelta(seconds=120))
        frozen_clock.advance(119)
        assert await worker.deliver(proposal["id"]) == "NOT_DUE"
        frozen_clock.advance(1)
        assert await worker.deliver(proposal["id"]) == "APPLIED"


@pytest.mark.parametrize(
    ("status", "code"),
    [(400, "REQUEST_REJECTED"), (412, "PRECONDITION_FAILED"), (409, "PRECONDITION_FAILED")],
)
async def test_client_errors_are_terminal(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
    status: int,
    code: str,
) -> None:
    async with serve(Receiver([Answer(status)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "FAILED"
        frozen_clock.advance(3600)
        assert await worker.deliver(proposal["id"]) == "NOT_DUE"
    assert len(receiver.requests) == 1
    state = await read(world, proposal["id"])
    assert state["deliveryTerminal"] is True and state["lastErrorCode"] == code
    assert state["nextAttemptAt"] is None
    assert state["attempts"][0]["responseClass"] == "TERMINAL"
    incidents, letters = await _incidents(worker)
    assert [(i.fingerprint, i.occurrence_count) for i in incidents] == [
        (f"deliver_proposal:{proposal['id']}", 1)
    ]
    assert [(d.error_code, d.attempt_count) for d in letters] == [(code, 1)]


async def test_hanging_receiver_times_out_and_is_retried(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    async with serve(Receiver([Answer(hang=True), Answer(200)])) as receiver:
        world = await build_world(gql, url=receiver.url, timeoutSeconds=1)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "FAILED"
        state = await read(world, proposal["id"])
        assert state["lastErrorCode"] == "TIMEOUT" and state["deliveryTerminal"] is False
        assert state["attempts"][0]["statusCode"] is None
        assert state["attempts"][0]["responseClass"] == "RETRYABLE"
        frozen_clock.advance(15)
        assert await worker.deliver(proposal["id"]) == "APPLIED"


async def test_unreachable_receiver_is_retried(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    world = await build_world(gql, url="http://127.0.0.1:9/hook")
    proposal = await approved(world)
    assert await worker.deliver(proposal["id"]) == "FAILED"
    assert (await read(world, proposal["id"]))["lastErrorCode"] == "CONNECTION_FAILED"


async def test_response_breaking_the_output_schema_is_terminal(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    schema = {
        "type": "object",
        "required": ["refund_id"],
        "properties": {"refund_id": {"type": "string"}},
    }
    async with serve(Receiver([Answer(200, body={"refund": 7})])) as receiver:
        world = await build_world(gql, url=receiver.url, output_schema=schema)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "FAILED"
    state = await read(world, proposal["id"])
    assert state["deliveryTerminal"] is True
    assert state["lastErrorCode"] == "RESPONSE_SCHEMA_INVALID"
    assert state["attempts"][0]["responseDigest"].startswith("sha256:")


async def test_response_meeting_the_output_schema_applies(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    schema = {"type": "object", "required": ["refund_id"]}
    async with serve(Receiver([Answer(201, body={"refund_id": "r-1"})])) as receiver:
        world = await build_world(gql, url=receiver.url, output_schema=schema)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "APPLIED"


async def test_exhausted_attempts_dead_letter_and_a_second_exhaustion_counts(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    async with serve(Receiver([Answer(500)])) as receiver:
        world = await build_world(gql, url=receiver.url, maxAttempts=2)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "FAILED"
        frozen_clock.advance(15)
        assert await worker.deliver(proposal["id"]) == "FAILED"
        state = await read(world, proposal["id"])
        assert state["deliveryTerminal"] is True and state["deliveryAttemptCount"] == 2
        [incident], [letter] = await _incidents(worker)
        assert incident.occurrence_count == 1 and letter.error_code == "RECEIVER_ERROR"
        await _resolve(worker, incident.id)

        retried = await gql(
            RETRY,
            {
                "input": {
                    "proposalId": proposal["id"],
                    "payloadDigest": proposal["payloadDigest"],
                    "idempotencyKey": "retry-1",
                }
            },
            world.admin,
        )
        assert retried["retryProposal"]["proposal"]["state"] == "QUEUED"
        assert retried["retryProposal"]["proposal"]["deliveryAttemptCount"] == 0
        assert await worker.deliver(proposal["id"]) == "FAILED"
        frozen_clock.advance(15)
        assert await worker.deliver(proposal["id"]) == "FAILED"

    assert len(receiver.requests) == 4
    # The operator's retry did not change the webhook-id: the receiver can still deduplicate.
    assert {r.webhook_id for r in receiver.requests} == {f"msg_{proposal['id']}"}
    [incident], letters = await _incidents(worker)
    assert incident.occurrence_count == 2 and incident.state == IncidentState.OPEN
    assert incident.resolved_at is None
    assert len(letters) == 2
    state = await read(world, proposal["id"])
    assert [a["attemptNumber"] for a in state["attempts"]] == [1, 2, 1, 2]


RETRY = """
mutation($input: RetryProposalInput!) {
  retryProposal(input: $input) { replayed proposal { id state deliveryAttemptCount } }
}
"""


async def _incidents(worker: Worker) -> tuple[list[Incident], list[DeadLetter]]:
    async with worker.services.sessionmaker() as session:
        incidents = list((await session.exec(select(Incident))).all())
        letters = list((await session.exec(select(DeadLetter))).all())
    return incidents, letters


async def _resolve(worker: Worker, incident_id: str) -> None:
    async with worker.services.sessionmaker() as session:
        incident = await session.get(Incident, incident_id)
        assert incident is not None
        incident.state = IncidentState.RESOLVED
        incident.resolved_at = clock.now()
        await session.commit()


def _iso(value: Any) -> str:
    return str(value.isoformat())


async def test_a_worker_with_another_key_sends_nothing_and_opens_an_incident(
    gql: GraphQLClient, worker: Worker, engine: AsyncEngine
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url)
        proposal = await approved(world)
        stranger = Sealer(decode_key(new_key_text()))
        services = replace(
            worker.services,
            work=WorkMaker(
                create_sessionmaker(engine), WorkServices(jobs=worker.jobs, sealer=stranger)
            ),
        )
        outcome = await Dispatcher(services, concurrency=1).deliver(proposal["id"])
    assert outcome == "SIGNING_SECRET_UNREADABLE"
    assert receiver.requests == []
    state = await read(world, proposal["id"])
    assert state["deliveryTerminal"] is True
    assert state["lastErrorCode"] == "SIGNING_SECRET_UNREADABLE"
    [incident], _ = await _incidents(worker)
    assert incident.last_error_code == "SIGNING_SECRET_UNREADABLE"
