"""Working an incident: from a receiver that always fails to a resolved incident."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.applications import Starlette

from signoff import clock
from signoff.models import Role
from signoff.resolvers.feed.subscriptions import encode_cursor
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import approved, read
from tests.live import Subscription, serve_in_process
from tests.receivers import Answer, Receiver, serve

INCIDENT_FIELDS = """
  id key severity category state title occurrenceCount lastErrorCode
  acknowledgedAt resolvedAt resolutionCode resolutionSummary
"""
INCIDENTS = f"""
query($state: IncidentState) {{
  incidents(state: $state) {{ nodes {{ {INCIDENT_FIELDS} proposal {{ id state }} }} }}
}}
"""
INCIDENT = f"""
query($id: ID!) {{
  incident(id: $id) {{
    {INCIDENT_FIELDS}
    deadLetters {{ state errorCode }}
    repairActions {{ id actionType before after }}
    auditTrail {{ action }}
    proposal {{ id state }}
  }}
}}
"""
ACKNOWLEDGE = f"""
mutation($input: AcknowledgeIncidentInput!) {{
  acknowledgeIncident(input: $input) {{ replayed incident {{ {INCIDENT_FIELDS} }} }}
}}
"""
RETRY = f"""
mutation($input: RetryIncidentInput!) {{
  retryIncident(input: $input) {{
    replayed incident {{ {INCIDENT_FIELDS} }} repairAction {{ id actionType before after }}
  }}
}}
"""
RESOLVE = f"""
mutation($input: ResolveIncidentInput!) {{
  resolveIncident(input: $input) {{ replayed incident {{ {INCIDENT_FIELDS} }} }}
}}
"""
OPEN = f"""
mutation($input: OpenIncidentInput!) {{
  openIncident(input: $input) {{ deduplicated incident {{ {INCIDENT_FIELDS} }} }}
}}
"""
EVENTS = "subscription($after: String) { incidentEvents(after: $after) { kind entityId } }"


async def _only_incident(gql: GraphQLClient, world: World) -> dict[str, Any]:
    nodes = (await gql(INCIDENTS, {}, world.admin))["incidents"]["nodes"]
    assert len(nodes) == 1, nodes
    incident: dict[str, Any] = nodes[0]
    return incident


def _input(incident: dict[str, Any], key: str, **extra: Any) -> dict[str, Any]:
    return {"input": {"incidentId": incident["id"], "idempotencyKey": key, **extra}}


async def test_an_incident_worked_from_open_to_resolved(
    app: Starlette, gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with (
        serve_in_process(app) as live,
        serve(Receiver([Answer(400), Answer(200)])) as receiver,  # refuses, then is fixed
    ):
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        after = {"after": encode_cursor(0)}
        async with Subscription(live.ws_url, world.admin, EVENTS, after) as feed:
            proposal = await approved(world)
            assert await worker.deliver(proposal["id"]) == "FAILED"
            opened = await _only_incident(gql, world)
            assert (opened["state"], opened["severity"], opened["category"]) == (
                "OPEN",
                "HIGH",
                "delivery_dead_letter",
            )

            ack = (await gql(ACKNOWLEDGE, _input(opened, "ack-1"), world.admin))[
                "acknowledgeIncident"
            ]
            assert ack["incident"]["state"] == "ACKNOWLEDGED" and not ack["replayed"]
            again = (await gql(ACKNOWLEDGE, _input(opened, "ack-1"), world.admin))[
                "acknowledgeIncident"
            ]
            assert again["replayed"] and again["incident"] == ack["incident"]

            retried = (await gql(RETRY, _input(opened, "retry-1"), world.admin))["retryIncident"]
            repair = retried["repairAction"]
            assert repair["actionType"] == "retry_delivery"
            assert repair["before"]["state"] == "FAILED" and repair["before"]["deliveryTerminal"]
            assert repair["after"] == {
                "state": "QUEUED",
                "deliveryTerminal": False,
                "deliveryAttemptCount": 0,
                "lastErrorCode": None,
            }
            replay = (await gql(RETRY, _input(opened, "retry-1"), world.admin))["retryIncident"]
            assert replay["replayed"] and replay["repairAction"]["id"] == repair["id"]
            assert await worker.deliver(proposal["id"]) == "APPLIED"

            resolution = {"code": "receiver_fixed", "summary": "The receiver was redeployed."}
            resolved = (await gql(RESOLVE, _input(opened, "res-1", **resolution), world.admin))[
                "resolveIncident"
            ]
            assert resolved["incident"]["state"] == "RESOLVED"
            assert resolved["incident"]["resolutionCode"] == "receiver_fixed"
            replayed = (await gql(RESOLVE, _input(opened, "res-1", **resolution), world.admin))[
                "resolveIncident"
            ]
            assert replayed["replayed"] and replayed["incident"] == resolved["incident"]
            other = {**resolution, "summary": "Something else entirely."}
            reused = await gql.error(RESOLVE, _input(opened, "res-1", **other), world.admin)
            assert reused.code == "IDEMPOTENCY_KEY_REUSED"
            for mutation in (ACKNOWLEDGE, RETRY):
                closed = await gql.error(mutation, _input(opened, "after-resolve"), world.admin)
                assert closed.code == "INCIDENT_RESOLVED"

            events = await feed.wait_for(4)
            await feed.quiet(0.5)
    assert [e["kind"] for e in feed.events] == [
        "incident.opened",
        "incident.acknowledged",
        "incident.retried",
        "incident.resolved",
    ]
    assert {e["entityId"] for e in events} == {opened["id"]}
    detail = (await gql(INCIDENT, {"id": opened["id"]}, world.admin))["incident"]
    assert [d["state"] for d in detail["deadLetters"]] == ["RESOLVED"]
    assert [r["id"] for r in detail["repairActions"]] == [repair["id"]]
    assert detail["proposal"] == {"id": proposal["id"], "state": "APPLIED"}
    actions = [a["action"] for a in detail["auditTrail"]]
    for step in ("incident.opened", "incident.acknowledged", "incident.retried"):
        assert step in actions
    assert actions.index("incident.retried") < actions.index("proposal.applied")
    assert actions[-1] == "incident.resolved"
    assert [r.webhook_id for r in receiver.requests] == [f"msg_{proposal['id']}"] * 2


async def test_work_that_fails_again_reopens_the_same_incident(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver([Answer(400)])) as receiver:  # refuses every time
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "FAILED"
        incident = await _only_incident(gql, world)
        await gql(RETRY, _input(incident, "retry-1"), world.admin)
        assert await worker.deliver(proposal["id"]) == "FAILED"
    again = await _only_incident(gql, world)
    assert again["id"] == incident["id"]
    assert (again["state"], again["occurrenceCount"]) == ("OPEN", 2)
    assert again["acknowledgedAt"] is None
    assert (await read(world, proposal["id"]))["deliveryTerminal"] is True


async def test_opened_incidents_are_deduplicated_by_key_and_have_nothing_to_retry(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql)
    integration = await gql.token(Role.INTEGRATION, name="payments")
    raised = {
        "key": "psp-outage",
        "severity": "CRITICAL",
        "category": "provider_outage",
        "title": "The payment provider answers 503",
        "summary": "Since 02:10 every refund call fails.",
    }
    first = (await gql(OPEN, {"input": raised}, integration))["openIncident"]
    assert not first["deduplicated"] and first["incident"]["severity"] == "CRITICAL"
    second = (await gql(OPEN, {"input": raised}, integration))["openIncident"]
    assert second["deduplicated"] and second["incident"]["id"] == first["incident"]["id"]
    nothing = await gql.error(RETRY, _input(first["incident"], "r"), world.admin)
    assert nothing.code == "NOT_REPAIRABLE"

    listed = (await gql(INCIDENTS, {"state": "OPEN"}, world.admin))["incidents"]["nodes"]
    assert [i["key"] for i in listed] == ["psp-outage"]
    bad = {"input": {**raised, "category": "Not A Code"}}
    assert (await gql.error(OPEN, bad, integration)).code == "RESOLUTION_INVALID"
    short = {"code": "x", "summary": "ok"}
    invalid = await gql.error(RESOLVE, _input(first["incident"], "k", **short), world.admin)
    assert invalid.code == "RESOLUTION_INVALID"


async def test_incidents_are_for_operators(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    for token in (world.agent, world.reviewers[0]):
        assert (await gql.error(INCIDENTS, {}, token)).code == "FORBIDDEN"
    raised = {"key": "k", "severity": "LOW", "category": "manual", "title": "t"}
    assert (await gql.error(OPEN, {"input": raised}, world.agent)).code == "FORBIDDEN"


async def test_concurrent_retries_of_one_incident_repair_once(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver([Answer(400)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "FAILED"
    incident = await _only_incident(gql, world)
    bodies = await asyncio.gather(
        *(gql.raw(RETRY, _input(incident, f"race-{i}"), world.admin) for i in range(6))
    )
    codes = sorted(b["errors"][0]["extensions"]["code"] if "errors" in b else "ok" for b in bodies)
    assert codes == ["NOT_REPAIRABLE"] * 5 + ["ok"]
    detail = (await gql(INCIDENT, {"id": incident["id"]}, world.admin))["incident"]
    assert len(detail["repairActions"]) == 1
    assert detail["auditTrail"][-1]["action"] in {"incident.retried", "proposal.retried"}
