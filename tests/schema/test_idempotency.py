"""Replays with the same key and input return the original result, marked ``replayed``."""

from __future__ import annotations

from tests.helpers import COMPLETE, GraphQLClient, build_world


async def test_proposing_twice_with_one_operation_key_replays(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    first = await world.propose(operation_key="refund-7")
    again = await world.propose(operation_key="refund-7")
    assert again["replayed"] is True
    assert again["proposal"] == first["proposal"]
    assert again["task"]["id"] == first["task"]["id"]
    page = await gql("{ proposals { edges { node { id } } } }", token=world.admin)
    assert len(page["proposals"]["edges"]) == 1


async def test_deciding_twice_with_one_key_replays(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposal = (await world.propose())["proposal"]
    first = await world.decide(world.reviewers[0], proposal, idempotencyKey="d-1")
    again = await world.decide(world.reviewers[0], proposal, idempotencyKey="d-1")
    assert first["replayed"] is False and again["replayed"] is True
    assert again["approval"]["id"] == first["approval"]["id"]
    assert again["proposal"]["state"] == "QUEUED"


async def test_completing_twice_with_one_key_replays(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    task = (
        await gql(
            """mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }""",
            {"input": {"queueId": world.queue_id, "kind": "REVIEW", "title": "Read the contract"}},
            world.agent,
        )
    )["createTask"]
    request = {"input": {"taskId": task["id"], "response": {"ok": True}, "idempotencyKey": "c-1"}}
    first = (await gql(COMPLETE, request, world.reviewers[0]))["completeTask"]
    again = (await gql(COMPLETE, request, world.reviewers[0]))["completeTask"]
    assert first["replayed"] is False and again["replayed"] is True
    assert (
        again["task"]
        == first["task"]
        == {"id": task["id"], "state": "COMPLETED", "response": {"ok": True}}
    )
