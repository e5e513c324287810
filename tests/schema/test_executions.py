"""Targets the agent executes: approval leaves the proposal APPROVED, nothing is delivered,
and the agent takes the one execution right, then reports (docs/design.md section 4.21)."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from signoff import clock
from signoff.models import AuditEvent, ChangeEvent, Incident, Role
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.delivery import executions
from signoff.resolvers.delivery.sweeps import enqueue_due_deliveries
from tests.helpers import GraphQLClient, World, build_world

BEGIN = """
mutation($input: BeginExecutionInput!) {
  beginExecution(input: $input) {
    lease
    proposal { id state executor executionStartedAt executedBy { name } }
  }
}
"""
REPORT = """
mutation($input: ReportExecutionInput!) {
  reportExecution(input: $input) {
    replayed proposal { id state result lastErrorCode deliveryTerminal appliedAt }
  }
}
"""
READ = """query($id: ID!) { proposal(id: $id) {
  state agentExecutes executor executedBy { name } result lastErrorCode nextAttemptAt
  target { url agentExecutes } } }"""
RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"refund_id": {"type": "string"}},
    "required": ["refund_id"],
}


class Recording:
    """A jobs queue that only notes what it was asked to enqueue."""

    def __init__(self) -> None:
        self.enqueued: list[tuple[str, int]] = []

    async def enqueue_delivery(self, proposal_id: str, attempt: int, at: Any = None) -> None:
        self.enqueued.append((proposal_id, attempt))

    async def enqueue_notification(self, notification_id: str, at: Any = None) -> None:
        raise AssertionError("no notifications here")


async def approved(world: World) -> dict[str, Any]:
    proposal: dict[str, Any] = (await world.propose())["proposal"]
    decided = await world.decide(world.reviewers[0], proposal)
    assert decided["proposal"]["state"] == "APPROVED"
    return proposal


def begin(proposal: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "input": {
            "proposalId": proposal["id"],
            "payloadDigest": proposal["payloadDigest"],
            **extra,
        }
    }


def report(proposal: dict[str, Any], lease: int, **extra: Any) -> dict[str, Any]:
    return {"input": {"proposalId": proposal["id"], "lease": lease, "outcome": "APPLIED", **extra}}


async def actions(gql: GraphQLClient, proposal_id: str) -> list[str]:
    async with gql.sessionmaker() as session:
        rows = await session.exec(
            select(AuditEvent.action)
            .where(AuditEvent.target_id == proposal_id)
            .order_by(col(AuditEvent.created_at), col(AuditEvent.id))
        )
        return list(rows.all())


async def kinds(gql: GraphQLClient, proposal_id: str) -> list[str]:
    async with gql.sessionmaker() as session:
        rows = await session.exec(
            select(ChangeEvent.kind)
            .where(ChangeEvent.proposal_id == proposal_id, ChangeEvent.entity_type == "proposal")
            .order_by(col(ChangeEvent.occurred_at), col(ChangeEvent.id))
        )
        return list(rows.all())


async def test_an_approved_proposal_of_an_agent_target_is_never_delivered(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql, url=None)
    proposal = await approved(world)
    read = (await gql(READ, {"id": proposal["id"]}, world.agent))["proposal"]
    assert read["agentExecutes"] is True and read["target"] == {"url": None, "agentExecutes": True}
    assert read["state"] == "APPROVED" and read["nextAttemptAt"] is None
    jobs = Recording()
    async with gql.sessionmaker() as session:
        assert await enqueue_due_deliveries(session, jobs) == 0  # type: ignore[arg-type]
    assert jobs.enqueued == []


async def test_a_bounded_auto_agent_target_approves_at_once(gql: GraphQLClient) -> None:
    world = await build_world(gql, url=None, approval_mode="BOUNDED_AUTO")
    proposal = (await world.propose())["proposal"]
    assert proposal["state"] == "APPROVED"
    began = (await gql(BEGIN, begin(proposal), world.agent))["beginExecution"]
    assert began["proposal"]["state"] == "EXECUTING"


async def test_one_approval_one_execution(gql: GraphQLClient) -> None:
    world = await build_world(gql, url=None, output_schema=RESULT_SCHEMA)
    proposal = await approved(world)
    began = (await gql(BEGIN, begin(proposal, executor="host-a:41"), world.agent))["beginExecution"]
    assert began["proposal"]["state"] == "EXECUTING"
    assert began["proposal"]["executor"] == "host-a:41"
    assert began["proposal"]["executedBy"] == {"name": "agent"}
    second = await gql.error(BEGIN, begin(proposal, executor="host-b:7"), world.agent)
    assert second.code == "EXECUTION_CONSUMED"
    assert second.extensions["executor"] == "host-a:41"
    assert second.extensions["state"] == "EXECUTING"
    assert "host-a:41" in second.errors[0]["message"]

    lease = began["lease"]
    broken = await gql.error(REPORT, report(proposal, lease, result={"id": 1}), world.agent)
    assert broken.code == "RESULT_SCHEMA_INVALID"
    assert broken.extensions["errors"][0]["message"] == "'refund_id' is a required property"
    stale = await gql.error(REPORT, report(proposal, lease + 1, result={}), world.agent)
    assert stale.code == "EXECUTION_NOT_HELD"

    done = (await gql(REPORT, report(proposal, lease, result={"refund_id": "r-9"}), world.agent))[
        "reportExecution"
    ]
    assert done["replayed"] is False
    assert done["proposal"]["state"] == "APPLIED"
    assert done["proposal"]["result"] == {"refund_id": "r-9"}
    again = await gql(REPORT, report(proposal, lease, result={"refund_id": "r-9"}), world.agent)
    assert again["reportExecution"]["replayed"] is True
    contradiction = await gql.error(REPORT, report(proposal, lease, outcome="FAILED"), world.agent)
    assert contradiction.code == "RESULT_TERMINAL"

    used = await gql.error(BEGIN, begin(proposal), world.agent)
    assert used.code == "EXECUTION_CONSUMED" and used.extensions["state"] == "APPLIED"
    assert await actions(gql, proposal["id"]) == [
        "proposal.proposed",
        "approval.approved",
        "proposal.approved",
        "proposal.execution_started",
        "proposal.applied",
    ]
    assert await kinds(gql, proposal["id"]) == [
        "proposal.proposed",
        "proposal.approved",
        "proposal.execution_started",
        "proposal.applied",
    ]


async def test_only_an_approved_proposal_of_its_own_agent_is_executed(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql, url=None)
    waiting = (await world.propose())["proposal"]
    early = await gql.error(BEGIN, begin(waiting), world.agent)
    assert early.code == "NOT_EXECUTABLE" and early.extensions["reason"] == "NOT_APPROVED"
    proposal = await approved(world)
    wrong = await gql.error(BEGIN, begin(proposal, payloadDigest="sha256:00"), world.agent)
    assert wrong.code == "PAYLOAD_DIGEST_MISMATCH"
    other = await gql.token(Role.AGENT, name="other-agent")
    assert (await gql.error(BEGIN, begin(proposal), other)).code == "FORBIDDEN"
    never = await gql.error(REPORT, report(proposal, 1), world.agent)
    assert never.code == "EXECUTION_NOT_HELD"
    read = (await gql(READ, {"id": proposal["id"]}, world.agent))["proposal"]
    assert read["state"] == "APPROVED" and read["executedBy"] is None


async def test_a_webhook_target_is_delivered_not_executed(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposal = (await world.propose())["proposal"]
    await world.decide(world.reviewers[0], proposal)
    refused = await gql.error(BEGIN, begin(proposal), world.agent)
    assert refused.code == "NOT_EXECUTABLE"
    assert refused.extensions["reason"] == "DELIVERED_BY_SIGNOFF"


async def test_a_reported_failure_is_final(gql: GraphQLClient) -> None:
    world = await build_world(gql, url=None)
    proposal = await approved(world)
    lease = (await gql(BEGIN, begin(proposal), world.agent))["beginExecution"]["lease"]
    failed = (
        await gql(
            REPORT,
            report(proposal, lease, outcome="FAILED", errorCode="CARD_DECLINED"),
            world.agent,
        )
    )["reportExecution"]["proposal"]
    assert failed["state"] == "FAILED" and failed["lastErrorCode"] == "CARD_DECLINED"
    retry = await gql.error(
        """mutation($input: RetryProposalInput!) { retryProposal(input: $input) { replayed } }""",
        {"input": {"proposalId": proposal["id"], "payloadDigest": proposal["payloadDigest"]}},
        world.admin,
    )
    assert retry.code == "NOT_RETRYABLE"
    assert (await gql.error(BEGIN, begin(proposal), world.agent)).code == "EXECUTION_CONSUMED"


async def test_a_lapsed_execution_is_unknown_and_an_incident(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql, url=None)
    proposal = await approved(world)
    lease = (await gql(BEGIN, begin(proposal, leaseSeconds=30, executor="crashed:1"), world.agent))[
        "beginExecution"
    ]["lease"]
    async with gql.sessionmaker() as session:
        assert await executions.lapse_executions(UnitOfWork(session)) == []
    frozen_clock.advance(31)
    async with gql.sessionmaker() as session:
        lapsed = await executions.lapse_executions(UnitOfWork(session))
    assert [p.id for p in lapsed] == [proposal["id"]]
    read = (await gql(READ, {"id": proposal["id"]}, world.agent))["proposal"]
    assert read["state"] == "EXECUTION_UNKNOWN" and read["lastErrorCode"] == "EXECUTION_UNKNOWN"
    async with gql.sessionmaker() as session:
        incident = (
            await session.exec(select(Incident).where(Incident.entity_id == proposal["id"]))
        ).one()
    assert incident.kind == "execution_unknown" and incident.state == "OPEN"
    assert "crashed:1" in incident.title
    # Never run again: not by a second begin, not by an operator's retry.
    again = await gql.error(BEGIN, begin(proposal), world.agent)
    assert again.code == "EXECUTION_CONSUMED" and again.extensions["state"] == "EXECUTION_UNKNOWN"
    retry = await gql.error(
        "mutation($id: ID!) { retryIncident(input: {incidentId: $id}) { incident { id } } }",
        {"id": incident.id},
        world.admin,
    )
    assert retry.code == "NOT_REPAIRABLE"
    # A late report from the holder still tells what happened.
    late = (await gql(REPORT, report(proposal, lease), world.agent))["reportExecution"]
    assert late["proposal"]["state"] == "APPLIED"
    assert (await actions(gql, proposal["id"]))[-2:] == [
        "proposal.execution_unknown",
        "proposal.applied",
    ]
