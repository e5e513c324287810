"""Reviewers see only their queues' work; agents see what they proposed."""

from __future__ import annotations

from signoff.models import Role
from tests.helpers import CLAIM, GraphQLClient, build_world

LIST = "{ proposals { edges { node { id } } } tasks { edges { node { id } } } }"


async def test_a_reviewer_outside_the_queue_sees_and_decides_nothing(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposed = await world.propose()
    outsider = await gql.token(Role.REVIEWER, name="outsider")

    listed = await gql(LIST, token=outsider)
    assert listed == {"proposals": {"edges": []}, "tasks": {"edges": []}}
    read = await gql.error(
        "query($id: ID!) { proposal(id: $id) { id } }", {"id": proposed["proposal"]["id"]}, outsider
    )
    assert read.code == "FORBIDDEN"
    claim = await gql.error(CLAIM, {"id": proposed["task"]["id"]}, outsider)
    assert claim.code == "FORBIDDEN"
    queue = await gql.error(
        "query($id: ID!) { proposals(queueId: $id) { edges { cursor } } }",
        {"id": world.queue_id},
        outsider,
    )
    assert queue.code == "FORBIDDEN"

    member = await gql(LIST, token=world.reviewers[0])
    assert [e["node"]["id"] for e in member["proposals"]["edges"]] == [proposed["proposal"]["id"]]
    assert [e["node"]["id"] for e in member["tasks"]["edges"]] == [proposed["task"]["id"]]


async def test_agents_see_only_their_own_proposals(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    mine = (await world.propose())["proposal"]
    other_agent = await gql.token(Role.AGENT, name="other-agent")
    listed = await gql(LIST, token=other_agent)
    assert listed["proposals"]["edges"] == []
    read = await gql.error(
        "query($id: ID!) { proposal(id: $id) { id } }", {"id": mine["id"]}, other_agent
    )
    assert read.code == "FORBIDDEN"


async def test_integrations_read_no_work(gql: GraphQLClient) -> None:
    integration = await gql.token(Role.INTEGRATION)
    error = await gql.error("{ proposals { edges { cursor } } }", token=integration)
    assert error.code == "FORBIDDEN"
