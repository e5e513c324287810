"""pauseTarget and resumeTarget as clients see them: who may, replays, refusals, races."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from sqlmodel import col, select

from signoff.models import AuditEvent, ChangeEvent, Role
from tests.conftest import requires_postgres
from tests.helpers import GraphQLClient, World, build_world

PAUSE = """
mutation($input: PauseTargetInput!) {
  pauseTarget(input: $input) { replayed target { id pausedAt } }
}
"""
RESUME = """
mutation($input: ResumeTargetInput!) {
  resumeTarget(input: $input) { replayed target { id pausedAt } }
}
"""


def pausing(world: World, reason: str = "receiver is down", key: str | None = None) -> Any:
    return {"input": {"targetId": world.target_id, "reason": reason, "idempotencyKey": key}}


def resuming(world: World, key: str | None = None) -> Any:
    return {"input": {"targetId": world.target_id, "idempotencyKey": key}}


async def audit_actions(gql: GraphQLClient, world: World) -> list[str]:
    async with gql.sessionmaker() as session:
        rows = await session.exec(
            select(AuditEvent.action)
            .where(AuditEvent.target_id == world.target_id)
            .order_by(col(AuditEvent.created_at), col(AuditEvent.id))
        )
        return list(rows.all())


async def feed_kinds(gql: GraphQLClient, world: World) -> list[str]:
    async with gql.sessionmaker() as session:
        rows = await session.exec(
            select(ChangeEvent.kind)
            .where(ChangeEvent.entity_id == world.target_id)
            .order_by(col(ChangeEvent.occurred_at), col(ChangeEvent.id))
        )
        return list(rows.all())


async def test_only_operators_and_admins_pause_and_resume(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    operator = await gql.token(Role.OPERATOR, name="operator")
    for token in (world.agent, world.reviewers[0]):
        assert (await gql.error(PAUSE, pausing(world), token)).code == "FORBIDDEN"
    paused = (await gql(PAUSE, pausing(world), operator))["pauseTarget"]
    assert paused["replayed"] is False and paused["target"]["pausedAt"] is not None
    assert (await gql.error(RESUME, resuming(world), world.agent)).code == "FORBIDDEN"
    resumed = (await gql(RESUME, resuming(world), world.admin))["resumeTarget"]
    assert resumed["target"]["pausedAt"] is None

    listed = await gql("{ targets { id pausedAt } }", token=world.reviewers[0])
    assert listed["targets"] == [{"id": world.target_id, "pausedAt": None}]
    assert await audit_actions(gql, world) == [
        "target.registered",
        "target.paused",
        "target.resumed",
    ]
    assert await feed_kinds(gql, world) == [
        "target.registered",
        "target.paused",
        "target.resumed",
    ]


async def test_a_repeated_key_replays_and_a_second_pause_is_refused(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    first = (await gql(PAUSE, pausing(world, key="p-1"), world.admin))["pauseTarget"]
    replay = (await gql(PAUSE, pausing(world, key="p-1"), world.admin))["pauseTarget"]
    assert replay == {**first, "replayed": True}
    reused = await gql.error(PAUSE, pausing(world, "another reason", key="p-1"), world.admin)
    assert reused.code == "IDEMPOTENCY_KEY_REUSED"
    again = await gql.error(PAUSE, pausing(world, key="p-2"), world.admin)
    assert again.code == "TARGET_ALREADY_PAUSED"
    assert again.errors[0]["extensions"]["pausedAt"] is not None

    resumed = (await gql(RESUME, resuming(world, key="r-1"), world.admin))["resumeTarget"]
    assert resumed["replayed"] is False
    replay = (await gql(RESUME, resuming(world, key="r-1"), world.admin))["resumeTarget"]
    assert replay["replayed"] is True and replay["target"]["pausedAt"] is None
    not_paused = await gql.error(RESUME, resuming(world, key="r-2"), world.admin)
    assert not_paused.code == "TARGET_NOT_PAUSED"
    # Replays and refusals wrote nothing.
    assert await audit_actions(gql, world) == [
        "target.registered",
        "target.paused",
        "target.resumed",
    ]


async def test_pause_checks_its_input(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    short = await gql.error(PAUSE, pausing(world, reason="x"), world.admin)
    assert short.code == "VALIDATION_FAILED" and short.errors[0]["extensions"]["field"] == "reason"
    unknown = await gql.error(
        PAUSE, {"input": {"targetId": "no-such-target", "reason": "down"}}, world.admin
    )
    assert unknown.code == "NOT_FOUND"


async def _race(gql: GraphQLClient, calls: list[tuple[str, Any, str]]) -> list[dict[str, Any]]:
    return list(await asyncio.gather(*(gql.raw(q, v, t) for q, v, t in calls)))


def _codes(bodies: list[dict[str, Any]]) -> Counter[str]:
    return Counter(
        b["errors"][0]["extensions"]["code"] if b.get("errors") else "ok" for b in bodies
    )


@requires_postgres
async def test_concurrent_pauses_one_wins_the_others_are_refused(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    operators = [await gql.token(Role.OPERATOR, name=f"op-{i}") for i in range(10)]
    bodies = await _race(
        gql, [(PAUSE, pausing(world, f"reason {i}"), t) for i, t in enumerate(operators)]
    )
    assert _codes(bodies) == Counter({"ok": 1, "TARGET_ALREADY_PAUSED": 9})

    # One operator retrying under one key: one pause, the rest are its replays.
    await gql(RESUME, resuming(world), world.admin)
    bodies = await _race(gql, [(PAUSE, pausing(world, key="same"), world.admin)] * 8)
    assert _codes(bodies) == Counter({"ok": 8})
    assert Counter(b["data"]["pauseTarget"]["replayed"] for b in bodies) == Counter(
        {False: 1, True: 7}
    )

    bodies = await _race(gql, [(RESUME, resuming(world), t) for t in operators])
    assert _codes(bodies) == Counter({"ok": 1, "TARGET_NOT_PAUSED": 9})
    assert Counter(await audit_actions(gql, world)) == Counter(
        {"target.registered": 1, "target.paused": 2, "target.resumed": 2}
    )
    assert Counter(await feed_kinds(gql, world)) == Counter(
        {"target.registered": 1, "target.paused": 2, "target.resumed": 2}
    )
