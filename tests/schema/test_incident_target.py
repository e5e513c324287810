"""``Incident.target``: the target an incident concerns, whether it is about the target
itself or about one of its proposals, for the console's incident page."""

from __future__ import annotations

import uuid
from typing import Any

from signoff.models import Incident, IncidentState, ProposalState, Role
from tests.helpers import GraphQLClient
from tests.schema.test_operations_statistics import NOW, new_seed

INCIDENT = """
query($id: ID!) {
  incident(id: $id) { id target { id name } proposal { id } }
}
"""


def about(entity_type: str, entity_id: str) -> Incident:
    return Incident(
        fingerprint=uuid.uuid4().hex,
        kind="manual",
        severity="LOW",
        state=IncidentState.OPEN,
        title="Look at this",
        entity_type=entity_type,
        entity_id=entity_id,
        first_seen_at=NOW,
        last_seen_at=NOW,
    )


async def test_an_incident_names_the_target_it_concerns(gql: GraphQLClient) -> None:
    seed = await new_seed(gql)
    proposal = seed.proposal(ProposalState.FAILED, delivery_terminal=True)
    on_proposal = about("proposal", proposal.id)
    on_target = about("target", seed.target_id)
    on_nothing = about("", "")
    on_a_gone_proposal = about("proposal", str(uuid.uuid4()))
    async with gql.sessionmaker() as session:
        session.add_all(seed.rows)
        await session.flush()
        session.add_all([on_proposal, on_target, on_nothing, on_a_gone_proposal])
        await session.commit()
    operator = await gql.token(Role.OPERATOR)

    async def read(incident: Incident) -> dict[str, Any]:
        found: dict[str, Any] = (await gql(INCIDENT, {"id": incident.id}, operator))["incident"]
        return found

    target = {"id": seed.target_id, "name": "refunds"}
    assert await read(on_proposal) == {
        "id": on_proposal.id,
        "target": target,
        "proposal": {"id": proposal.id},
    }
    assert await read(on_target) == {"id": on_target.id, "target": target, "proposal": None}
    assert (await read(on_nothing))["target"] is None
    assert (await read(on_a_gone_proposal))["target"] is None
