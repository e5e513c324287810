"""202 Accepted, then the integration reports the result with ``reportActionResult``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlmodel import func, select

from signoff import clock
from signoff.models import AuditEvent, Role
from tests.conftest import requires_postgres
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import approved, read
from tests.receivers import Answer, Receiver, serve

REPORT = """
mutation($input: ReportActionResultInput!) {
  reportActionResult(input: $input) {
    replayed proposal { id state lastErrorCode deliveryTerminal }
  }
}
"""


async def accepted(gql: GraphQLClient, worker: Worker) -> tuple[World, dict[str, Any], str]:
    async with serve(Receiver([Answer(202)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "APPLYING"
    integration = await gql.token(Role.INTEGRATION, name="payments-integration")
    return world, proposal, integration


def report(proposal: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "input": {
            "proposalId": proposal["id"],
            "operationKey": proposal["operationKey"],
            "payloadDigest": proposal["payloadDigest"],
            "status": "APPLIED",
            "providerRequestId": "req-1",
            **extra,
        }
    }


async def test_202_then_report_applied(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    world, proposal, integration = await accepted(gql, worker)
    state = await read(world, proposal["id"])
    assert state["state"] == "APPLYING" and state["attempts"][0]["responseClass"] == "ACCEPTED"

    done = (await gql(REPORT, report(proposal), integration))["reportActionResult"]
    assert done == {
        "replayed": False,
        "proposal": {
            "id": proposal["id"],
            "state": "APPLIED",
            "lastErrorCode": None,
            "deliveryTerminal": False,
        },
    }
    again = (await gql(REPORT, report(proposal), integration))["reportActionResult"]
    assert again["replayed"] is True and again["proposal"]["state"] == "APPLIED"

    contradiction = await gql.error(REPORT, report(proposal, status="FAILED"), integration)
    assert contradiction.code == "RESULT_TERMINAL"


async def test_report_must_match_the_proposal_identity(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    world, proposal, integration = await accepted(gql, worker)
    wrong_key = await gql.error(REPORT, report(proposal, operationKey="other"), integration)
    assert wrong_key.code == "RESULT_IDENTITY_MISMATCH"
    wrong_digest = await gql.error(REPORT, report(proposal, payloadDigest="sha256:00"), integration)
    assert wrong_digest.code == "RESULT_IDENTITY_MISMATCH"
    not_integration = await gql.error(REPORT, report(proposal), world.agent)
    assert not_integration.code == "FORBIDDEN"
    assert (await read(world, proposal["id"]))["state"] == "APPLYING"


async def test_reported_failure_retries_or_ends(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    world, proposal, integration = await accepted(gql, worker)
    retrying = await gql(
        REPORT,
        report(proposal, status="FAILED", retryAfterSeconds=300, errorCode="PROVIDER_BUSY"),
        integration,
    )
    assert retrying["reportActionResult"]["proposal"]["state"] == "FAILED"
    state = await read(world, proposal["id"])
    assert state["lastErrorCode"] == "PROVIDER_BUSY" and state["deliveryTerminal"] is False
    assert worker.jobs.enqueued == []  # the app's own sessions have no job queue here
    ended = await gql(
        REPORT,
        report(proposal, status="FAILED", terminal=True, errorCode="CARD_DECLINED"),
        integration,
    )
    assert ended["reportActionResult"]["proposal"]["deliveryTerminal"] is True
    replay = await gql(
        REPORT,
        report(proposal, status="FAILED", terminal=True, errorCode="CARD_DECLINED"),
        integration,
    )
    assert replay["reportActionResult"]["replayed"] is True


async def test_report_before_approval_is_refused(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposal = (await world.propose())["proposal"]
    integration = await gql.token(Role.INTEGRATION)
    refused = await gql.error(REPORT, report(proposal), integration)
    assert refused.code == "RESULT_NOT_EXPECTED"


@requires_postgres
@pytest.mark.parametrize("reports", [8])
async def test_concurrent_reports_apply_once(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock, reports: int
) -> None:
    _, proposal, integration = await accepted(gql, worker)
    answers = await asyncio.gather(
        *(gql.raw(REPORT, report(proposal), integration) for _ in range(reports))
    )
    replayed = [a["data"]["reportActionResult"]["replayed"] for a in answers]
    assert sorted(replayed) == [False] + [True] * (reports - 1)
    async with worker.services.sessionmaker() as session:
        applied = (
            await session.exec(
                select(func.count()).where(
                    AuditEvent.action == "proposal.applied", AuditEvent.target_id == proposal["id"]
                )
            )
        ).one()
    assert applied == 1
