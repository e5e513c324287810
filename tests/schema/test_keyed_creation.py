"""Mutations that create something take an ``idempotencyKey``: a client that saw an error
(a timeout, ``SERVICE_UNAVAILABLE``) retries under the same key without creating a duplicate."""

from __future__ import annotations

from typing import Any

from signoff.models import Role
from tests.helpers import CREATE_QUEUE, PAYMENT_SCHEMA, REGISTER_TARGET, GraphQLClient, build_world

CREATE_TASK = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id title } }"


async def _count(gql: GraphQLClient, token: str, query: str, field: str) -> int:
    data = await gql(query, token=token)
    rows: Any = data[field]
    return len(rows["edges"]) if isinstance(rows, dict) else len(rows)


async def test_creating_a_queue_twice_with_one_key_creates_one(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN)
    request = {"input": {"slug": "refunds", "name": "Refunds", "idempotencyKey": "q-1"}}
    first = (await gql(CREATE_QUEUE, request, admin))["createQueue"]
    again = (await gql(CREATE_QUEUE, request, admin))["createQueue"]
    assert again == first
    assert await _count(gql, admin, "{ queues { id } }", "queues") == 1


async def test_a_queue_key_reused_for_another_queue_is_refused(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN)
    first = (
        await gql(CREATE_QUEUE, {"input": {"slug": "a", "name": "A", "idempotencyKey": "k"}}, admin)
    )["createQueue"]
    error = await gql.error(
        CREATE_QUEUE, {"input": {"slug": "b", "name": "B", "idempotencyKey": "k"}}, admin
    )
    assert error.code == "IDEMPOTENCY_KEY_REUSED"
    assert error.errors[0]["extensions"]["queueId"] == first["id"]
    assert await _count(gql, admin, "{ queues { id } }", "queues") == 1


async def test_registering_a_target_twice_with_one_key_answers_the_same_secret(
    gql: GraphQLClient,
) -> None:
    admin = await gql.token(Role.ADMIN)
    request = {
        "input": {
            "name": "payments",
            "url": "https://example.com/hook",
            "inputSchema": PAYMENT_SCHEMA,
            "approvalMode": "BOUNDED_AUTO",
            "idempotencyKey": "t-1",
        }
    }
    first = (await gql(REGISTER_TARGET, request, admin))["registerTarget"]
    again = (await gql(REGISTER_TARGET, request, admin))["registerTarget"]
    assert again == first
    assert first["signingSecret"].startswith("whsec_")
    assert await _count(gql, admin, "{ targets { id } }", "targets") == 1


async def test_creating_a_task_twice_with_one_key_creates_one(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    request = {
        "input": {
            "queueId": world.queue_id,
            "kind": "REVIEW",
            "title": "Read the contract",
            "idempotencyKey": "task-1",
        }
    }
    first = (await gql(CREATE_TASK, request, world.agent))["createTask"]
    again = (await gql(CREATE_TASK, request, world.agent))["createTask"]
    assert again == first
    tasks = "{ tasks(state: OPEN) { edges { node { id } } } }"
    assert await _count(gql, world.admin, tasks, "tasks") == 1


async def test_keys_are_per_actor(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    other_agent = await gql.token(Role.AGENT)
    request = {
        "input": {"queueId": world.queue_id, "kind": "REVIEW", "title": "T", "idempotencyKey": "k"}
    }
    mine = (await gql(CREATE_TASK, request, world.agent))["createTask"]
    theirs = (await gql(CREATE_TASK, request, other_agent))["createTask"]
    assert mine["id"] != theirs["id"]
