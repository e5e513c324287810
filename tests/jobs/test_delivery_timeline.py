"""A proposal's timeline after real deliveries to a receiver on loopback: each delivery
start with the attempt it made and what came back, and, for staff, the incident its
terminal failure opened."""

from __future__ import annotations

from signoff import clock
from tests.helpers import GraphQLClient, build_world
from tests.jobs.conftest import Worker
from tests.receivers import Answer, Receiver, serve

TIMELINE = """
query($id: ID!) { proposal(id: $id) { timeline {
  kind action errorCode
  attempt { attemptNumber responseClass statusCode }
  incident { id state }
} } }
"""

ACKNOWLEDGE = """
mutation($id: ID!) { acknowledgeIncident(input: {incidentId: $id}) { incident { state } } }
"""


async def test_deliveries_and_their_incident_are_in_the_timeline(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver([Answer(500), Answer(400)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = (await world.propose())["proposal"]
        await world.decide(world.reviewers[0], proposal)
        assert await worker.deliver(proposal["id"]) == "FAILED"
        frozen_clock.advance(15)
        assert await worker.deliver(proposal["id"]) == "FAILED"

    staff = (await gql(TIMELINE, {"id": proposal["id"]}, world.admin))["proposal"]["timeline"]
    [incident] = {e["incident"]["id"] for e in staff if e["incident"]}
    await gql(ACKNOWLEDGE, {"id": incident}, world.admin)

    staff = (await gql(TIMELINE, {"id": proposal["id"]}, world.admin))["proposal"]["timeline"]
    told = [
        (e["kind"], e["action"], e["errorCode"], e["attempt"], (e["incident"] or {}).get("id"))
        for e in staff
    ]
    first = {"attemptNumber": 1, "responseClass": "RETRYABLE", "statusCode": 500}
    second = {"attemptNumber": 2, "responseClass": "TERMINAL", "statusCode": 400}
    assert [kind for kind, *_ in told[:3]] == ["PROPOSED", "DECISION", "APPROVED"]
    assert told[3:] == [
        ("DELIVERY", "proposal.delivery_started", None, first, None),
        ("DELIVERY", "proposal.retry_scheduled", None, None, None),
        ("DELIVERY", "proposal.delivery_started", None, second, None),
        ("DELIVERY", "proposal.delivery_failed", "REQUEST_REJECTED", None, None),
        ("INCIDENT", "incident.opened", "REQUEST_REJECTED", None, incident),
        ("DELIVERY", "proposal.dead_lettered", "REQUEST_REJECTED", None, None),
        ("INCIDENT", "incident.acknowledged", None, None, incident),
    ]
    # Incidents are for operators and admins: a reviewer's timeline leaves them out.
    seen = (await gql(TIMELINE, {"id": proposal["id"]}, world.reviewers[0]))["proposal"]
    assert [e["kind"] for e in seen["timeline"]] == [e[0] for e in told if e[0] != "INCIDENT"]
