"""Relay's ``node(id:)`` and ``nodes(ids:)``: any object with an id is fetched again by its
id alone, under the same visibility as its own query; an id no object has, or a malformed
one, is ``NOT_FOUND``."""

from __future__ import annotations

import uuid

from signoff.models import Role
from tests.helpers import GraphQLClient, build_world

NODE = """query($id: ID!) {
  node(id: $id) {
    __typename id
    ... on Proposal { state payloadDigest }
    ... on HumanTask { taskState: state title }
    ... on Queue { slug }
    ... on Target { name }
  }
}"""

NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }"


async def test_node_fetches_each_kind_of_object_by_its_id(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposed = await world.propose()
    proposal, task = proposed["proposal"], proposed["task"]
    reviewer = world.reviewers[0]

    found = (await gql(NODE, {"id": proposal["id"]}, reviewer))["node"]
    assert found == {
        "__typename": "Proposal",
        "id": proposal["id"],
        "state": "APPROVAL_REQUIRED",
        "payloadDigest": proposal["payloadDigest"],
    }
    found = (await gql(NODE, {"id": task["id"]}, reviewer))["node"]
    assert (found["__typename"], found["taskState"]) == ("HumanTask", "OPEN")
    found = (await gql(NODE, {"id": world.queue_id}, reviewer))["node"]
    assert found == {"__typename": "Queue", "id": world.queue_id, "slug": world.queue_slug}
    found = (await gql(NODE, {"id": world.target_id}, reviewer))["node"]
    assert found["__typename"] == "Target"


async def test_unknown_foreign_and_malformed_ids_are_not_found(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    for node_id in (str(uuid.uuid4()), "not-an-id", "", "x" * 500, "' OR 1=1 --"):
        refused = await gql.error(NODE, {"id": node_id}, world.admin)
        assert refused.code == "NOT_FOUND", node_id


async def test_node_applies_the_visibility_of_the_object(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposed = await world.propose()
    outsider = await gql.token(Role.REVIEWER, name="outsider")
    refused = await gql.error(NODE, {"id": proposed["proposal"]["id"]}, outsider)
    assert refused.code == "FORBIDDEN"
    refused = await gql.error(NODE, {"id": world.queue_id}, outsider)
    assert refused.code == "FORBIDDEN"


async def test_nodes_answers_each_id_in_order_with_a_refusal_where_it_fails(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql)
    proposed = await world.propose()
    ids = [proposed["task"]["id"], "malformed", proposed["proposal"]["id"]]
    body = await gql.raw(NODES, {"ids": ids}, world.reviewers[0])
    assert body["data"]["nodes"] == [
        {"__typename": "HumanTask", "id": ids[0]},
        None,
        {"__typename": "Proposal", "id": ids[2]},
    ]
    assert [(e["path"], e["extensions"]["code"]) for e in body["errors"]] == [
        (["nodes", 1], "NOT_FOUND")
    ]


async def test_nodes_takes_at_most_a_page_of_ids(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    refused = await gql.error(NODES, {"ids": [world.queue_id] * 101}, world.admin)
    assert refused.code == "VALIDATION_FAILED"
