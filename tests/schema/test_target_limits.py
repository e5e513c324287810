"""Per-target limits as clients see them: registering with limits, reading them back, and
``setTargetLimits`` (who may, replays, refusals, what is audited and announced)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import update
from sqlmodel import col, func, select

from signoff.models import AuditEvent, ChangeEvent, Role, Target
from tests.helpers import PAYMENT_SCHEMA, GraphQLClient, World, build_world

REGISTER = """
mutation($input: RegisterTargetInput!) {
  registerTarget(input: $input) { target { id maxConcurrency ratePerSecond circuitState } }
}
"""
LIMITS = """
query($id: ID!) {
  target(id: $id) {
    maxConcurrency ratePerSecond circuitState consecutiveFailures
    lastError lastErrorAt circuitOpenedAt nextProbeAt
  }
}
"""


SET_LIMITS = """
mutation($input: SetTargetLimitsInput!) {
  setTargetLimits(input: $input) { replayed target { id maxConcurrency ratePerSecond } }
}
"""


def registering(**limits: Any) -> Any:
    return {
        "input": {
            "name": f"refunds-{uuid.uuid4().hex[:6]}",
            "url": "http://127.0.0.1:9/hook",
            "inputSchema": PAYMENT_SCHEMA,
            "approvalMode": "BOUNDED_AUTO",
            **limits,
        }
    }


async def target_count(gql: GraphQLClient) -> int:
    async with gql.sessionmaker() as session:
        return (await session.exec(select(func.count()).select_from(Target))).one()


async def test_a_target_registered_with_limits_reads_them_back(gql: GraphQLClient) -> None:
    operator = await gql.token(Role.OPERATOR)
    registered = (await gql(REGISTER, registering(maxConcurrency=5, ratePerSecond=2.5), operator))[
        "registerTarget"
    ]["target"]
    assert registered["maxConcurrency"] == 5 and registered["ratePerSecond"] == 2.5

    agent = await gql.token(Role.AGENT)  # whoever may see targets sees their limits
    read = (await gql(LIMITS, {"id": registered["id"]}, agent))["target"]
    assert read == {
        "maxConcurrency": 5,
        "ratePerSecond": 2.5,
        "circuitState": "CLOSED",
        "consecutiveFailures": 0,
        "lastError": None,
        "lastErrorAt": None,
        "circuitOpenedAt": None,
        "nextProbeAt": None,
    }


async def test_a_target_registered_without_limits_gets_the_defaults(gql: GraphQLClient) -> None:
    operator = await gql.token(Role.OPERATOR)
    target = (await gql(REGISTER, registering(), operator))["registerTarget"]["target"]
    assert target["maxConcurrency"] == 20 and target["ratePerSecond"] is None
    edges = {"maxConcurrency": 1000, "ratePerSecond": 0.01}
    target = (await gql(REGISTER, registering(**edges), operator))["registerTarget"]["target"]
    assert target["maxConcurrency"] == 1000 and target["ratePerSecond"] == 0.01


@pytest.mark.parametrize(
    ("limits", "field", "says"),
    [
        ({"maxConcurrency": 0}, "maxConcurrency", "between 1 and 1000"),
        ({"maxConcurrency": 1001}, "maxConcurrency", "between 1 and 1000"),
        ({"ratePerSecond": 0.001}, "ratePerSecond", "between 0.01 and 10000"),
        ({"ratePerSecond": 0}, "ratePerSecond", "between 0.01 and 10000"),
        ({"ratePerSecond": -1}, "ratePerSecond", "between 0.01 and 10000"),
        ({"ratePerSecond": 10000.5}, "ratePerSecond", "between 0.01 and 10000"),
    ],
)
async def test_registering_refuses_limits_out_of_range(
    gql: GraphQLClient, limits: dict[str, Any], field: str, says: str
) -> None:
    operator = await gql.token(Role.OPERATOR)
    refused = await gql.error(REGISTER, registering(**limits), operator)
    assert refused.code == "VALIDATION_FAILED"
    assert refused.errors[0]["extensions"]["field"] == field
    assert says in refused.errors[0]["message"]
    assert await target_count(gql) == 0


def limiting(world: World, **input: Any) -> Any:
    return {"input": {"targetId": world.target_id, **input}}


async def stored(gql: GraphQLClient, target_id: str) -> Target:
    async with gql.sessionmaker() as session:
        target = await session.get(Target, target_id)
        assert target is not None
        return target


async def limit_records(gql: GraphQLClient, world: World) -> list[tuple[dict[str, Any], Any]]:
    """The ``target.limits_changed`` audit details and change-event snapshots, in order."""
    async with gql.sessionmaker() as session:
        audits = await session.exec(
            select(AuditEvent.details)
            .where(AuditEvent.target_id == world.target_id)
            .where(AuditEvent.action == "target.limits_changed")
            .order_by(col(AuditEvent.created_at), col(AuditEvent.id))
        )
        events = await session.exec(
            select(ChangeEvent.snapshot)
            .where(ChangeEvent.entity_id == world.target_id)
            .where(ChangeEvent.kind == "target.limits_changed")
            .order_by(col(ChangeEvent.occurred_at), col(ChangeEvent.id))
        )
        return list(zip(audits.all(), events.all(), strict=True))


async def test_operators_and_admins_set_limits_others_may_not(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    operator = await gql.token(Role.OPERATOR)
    for token in (world.agent, world.reviewers[0]):
        refused = await gql.error(SET_LIMITS, limiting(world, maxConcurrency=3), token)
        assert refused.code == "FORBIDDEN"
    assert await limit_records(gql, world) == []

    both = limiting(world, maxConcurrency=3, ratePerSecond=0.5)
    changed = (await gql(SET_LIMITS, both, operator))["setTargetLimits"]
    assert changed == {
        "replayed": False,
        "target": {"id": world.target_id, "maxConcurrency": 3, "ratePerSecond": 0.5},
    }
    # What is left out stays.
    only_rate = limiting(world, ratePerSecond=4)
    changed = (await gql(SET_LIMITS, only_rate, world.admin))["setTargetLimits"]["target"]
    assert changed["maxConcurrency"] == 3 and changed["ratePerSecond"] == 4
    cleared = limiting(world, clearRate=True)
    changed = (await gql(SET_LIMITS, cleared, world.admin))["setTargetLimits"]["target"]
    assert changed["maxConcurrency"] == 3 and changed["ratePerSecond"] is None

    read = await gql("{ targets { id maxConcurrency ratePerSecond } }", token=world.agent)
    assert read["targets"] == [{"id": world.target_id, "maxConcurrency": 3, "ratePerSecond": None}]
    name = (await stored(gql, world.target_id)).name
    steps = [(20, None, 3, 0.5), (3, 0.5, 3, 4.0), (3, 4.0, 3, None)]
    assert await limit_records(gql, world) == [
        (
            {
                "before": {"max_concurrency": c0, "rate_per_second": r0},
                "after": {"max_concurrency": c1, "rate_per_second": r1},
            },
            {"name": name, "pausedAt": None, "maxConcurrency": c1, "ratePerSecond": r1},
        )
        for c0, r0, c1, r1 in steps
    ]


async def test_a_new_rate_starts_the_limiter_afresh(gql: GraphQLClient) -> None:
    world = await build_world(gql, ratePerSecond=1)
    later = datetime(2030, 1, 1, tzinfo=UTC)
    async with gql.sessionmaker() as session:
        await session.exec(
            update(Target).where(col(Target.id) == world.target_id).values(rate_available_at=later)
        )
        await session.commit()

    await gql(SET_LIMITS, limiting(world, maxConcurrency=2), world.admin)
    assert (await stored(gql, world.target_id)).rate_available_at == later
    await gql(SET_LIMITS, limiting(world, ratePerSecond=10), world.admin)
    assert (await stored(gql, world.target_id)).rate_available_at is None


async def test_a_repeated_key_replays_and_another_request_under_it_is_refused(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql)
    keyed = limiting(world, maxConcurrency=7, idempotencyKey="limits-1")
    first = (await gql(SET_LIMITS, keyed, world.admin))["setTargetLimits"]
    replay = (await gql(SET_LIMITS, keyed, world.admin))["setTargetLimits"]
    assert first["replayed"] is False and replay == {**first, "replayed": True}
    other = limiting(world, maxConcurrency=8, idempotencyKey="limits-1")
    assert (await gql.error(SET_LIMITS, other, world.admin)).code == "IDEMPOTENCY_KEY_REUSED"
    assert (await stored(gql, world.target_id)).max_concurrency == 7
    assert len(await limit_records(gql, world)) == 1


@pytest.mark.parametrize(
    ("input", "field", "says"),
    [
        ({"maxConcurrency": 0}, "maxConcurrency", "between 1 and 1000"),
        ({"maxConcurrency": 5000}, "maxConcurrency", "between 1 and 1000"),
        ({"ratePerSecond": 0.0}, "ratePerSecond", "between 0.01 and 10000"),
        ({"ratePerSecond": 20000}, "ratePerSecond", "between 0.01 and 10000"),
        ({"maxConcurrency": 5, "ratePerSecond": 1e9}, "ratePerSecond", "between 0.01 and 10000"),
        ({"ratePerSecond": 5, "clearRate": True}, "clearRate", "not both"),
        ({}, None, "Nothing to change"),
        ({"clearRate": False}, None, "Nothing to change"),
    ],
)
async def test_set_limits_refuses_what_is_out_of_range_and_changes_nothing(
    gql: GraphQLClient, input: dict[str, Any], field: str | None, says: str
) -> None:
    world = await build_world(gql, maxConcurrency=4, ratePerSecond=2)
    refused = await gql.error(SET_LIMITS, limiting(world, **input), world.admin)
    assert refused.code == "VALIDATION_FAILED"
    assert refused.errors[0]["extensions"].get("field") == field
    assert says in refused.errors[0]["message"]
    target = await stored(gql, world.target_id)
    assert (target.max_concurrency, target.rate_per_second) == (4, 2)
    assert await limit_records(gql, world) == []


async def test_set_limits_of_an_unknown_target_is_not_found(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN)
    unknown = {"input": {"targetId": "no-such-target", "maxConcurrency": 2}}
    assert (await gql.error(SET_LIMITS, unknown, admin)).code == "NOT_FOUND"
