"""closeTargetCircuit and the circuit's fields as clients see them: who may, replays,
refusals, races, and what is audited and announced.

The delivery engine is what opens a circuit; these tests open it by writing its columns.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlmodel import col, select

from signoff.models import AuditEvent, ChangeEvent, CircuitState, Role, Target
from tests.conftest import requires_postgres
from tests.helpers import GraphQLClient, World, build_world

CLOSE = """
mutation($input: CloseTargetCircuitInput!) {
  closeTargetCircuit(input: $input) {
    replayed
    target { id circuitState consecutiveFailures circuitOpenedAt nextProbeAt lastError }
  }
}
"""
CIRCUIT = """
query($id: ID!) {
  target(id: $id) {
    circuitState consecutiveFailures lastError lastErrorAt circuitOpenedAt nextProbeAt
  }
}
"""
OPENED_AT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
FAILED_AT = datetime(2026, 12, 1, 9, 0, 5, tzinfo=UTC)
PROBE_AT = datetime(2026, 12, 1, 9, 0, 35, tzinfo=UTC)


async def open_circuit(
    gql: GraphQLClient, world: World, state: CircuitState = CircuitState.OPEN
) -> None:
    """Leave the target's circuit as the delivery engine would after ten failures."""
    async with gql.sessionmaker() as session:
        await session.exec(
            update(Target)
            .where(col(Target.id) == world.target_id)
            .values(
                circuit_state=state.value,
                consecutive_failures=10,
                last_error="RECEIVER_ERROR (HTTP 503)",
                last_error_at=FAILED_AT,
                circuit_opened_at=OPENED_AT,
                circuit_probe_at=PROBE_AT,
            )
        )
        await session.commit()


def closing(world: World, reason: str = "receiver redeployed", key: str | None = None) -> Any:
    return {"input": {"targetId": world.target_id, "reason": reason, "idempotencyKey": key}}


async def records(gql: GraphQLClient, world: World) -> list[tuple[dict[str, Any], Any]]:
    """The ``target.circuit_closed`` audit details and change-event snapshots, in order."""
    async with gql.sessionmaker() as session:
        audits = await session.exec(
            select(AuditEvent.details)
            .where(AuditEvent.target_id == world.target_id)
            .where(AuditEvent.action == "target.circuit_closed")
            .order_by(col(AuditEvent.created_at), col(AuditEvent.id))
        )
        events = await session.exec(
            select(ChangeEvent.snapshot)
            .where(ChangeEvent.entity_id == world.target_id)
            .where(ChangeEvent.kind == "target.circuit_closed")
            .order_by(col(ChangeEvent.occurred_at), col(ChangeEvent.id))
        )
        return list(zip(audits.all(), events.all(), strict=True))


async def test_an_open_circuit_reads_back_to_whoever_sees_targets(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    await open_circuit(gql, world)
    for token in (world.agent, world.reviewers[0], world.admin):
        read = (await gql(CIRCUIT, {"id": world.target_id}, token))["target"]
        assert read == {
            "circuitState": "OPEN",
            "consecutiveFailures": 10,
            "lastError": "RECEIVER_ERROR (HTTP 503)",
            "lastErrorAt": FAILED_AT.isoformat(),
            "circuitOpenedAt": OPENED_AT.isoformat(),
            "nextProbeAt": PROBE_AT.isoformat(),
        }


async def test_an_operator_closes_an_open_circuit_others_may_not(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    await open_circuit(gql, world)
    for token in (world.agent, world.reviewers[0]):
        assert (await gql.error(CLOSE, closing(world), token)).code == "FORBIDDEN"

    operator = await gql.token(Role.OPERATOR)
    closed = (await gql(CLOSE, closing(world), operator))["closeTargetCircuit"]
    assert closed == {
        "replayed": False,
        "target": {
            "id": world.target_id,
            "circuitState": "CLOSED",
            "consecutiveFailures": 0,
            "circuitOpenedAt": None,
            "nextProbeAt": None,
            "lastError": "RECEIVER_ERROR (HTTP 503)",  # what last went wrong stays visible
        },
    }
    name = (await gql(f'{{ target(id: "{world.target_id}") {{ name }} }}', token=operator))[
        "target"
    ]["name"]
    assert await records(gql, world) == [
        (
            {
                "reason": "receiver redeployed",
                "circuit_state": "OPEN",
                "consecutive_failures": 10,
                "circuit_opened_at": OPENED_AT.isoformat(),
            },
            {
                "name": name,
                "pausedAt": None,
                "circuitState": "CLOSED",
                "consecutiveFailures": 0,
                "lastError": "RECEIVER_ERROR (HTTP 503)",
                "nextProbeAt": None,
            },
        )
    ]


async def test_a_half_open_circuit_closes_too(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    await open_circuit(gql, world, CircuitState.HALF_OPEN)
    closed = (await gql(CLOSE, closing(world), world.admin))["closeTargetCircuit"]
    assert closed["target"]["circuitState"] == "CLOSED"
    [(details, _)] = await records(gql, world)
    assert details["circuit_state"] == "HALF_OPEN"


async def test_a_closed_circuit_is_refused_and_a_repeated_key_replays(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    refused = await gql.error(CLOSE, closing(world, key="c-0"), world.admin)
    assert refused.code == "TARGET_CIRCUIT_NOT_OPEN"
    assert refused.errors[0]["extensions"]["circuitState"] == "CLOSED"
    message = refused.errors[0]["message"]
    assert re.match(r"The circuit of target 'refunds-\w+' is closed: ", message), message

    await open_circuit(gql, world)
    first = (await gql(CLOSE, closing(world, key="c-1"), world.admin))["closeTargetCircuit"]
    replay = (await gql(CLOSE, closing(world, key="c-1"), world.admin))["closeTargetCircuit"]
    assert first["replayed"] is False and replay == {**first, "replayed": True}
    reused = await gql.error(CLOSE, closing(world, "another reason", key="c-1"), world.admin)
    assert reused.code == "IDEMPOTENCY_KEY_REUSED"
    again = await gql.error(CLOSE, closing(world, key="c-2"), world.admin)
    assert again.code == "TARGET_CIRCUIT_NOT_OPEN"
    # Refusals and replays wrote nothing.
    assert len(await records(gql, world)) == 1


async def test_close_checks_its_input(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    await open_circuit(gql, world)
    short = await gql.error(CLOSE, closing(world, reason="x"), world.admin)
    assert short.code == "VALIDATION_FAILED" and short.errors[0]["extensions"]["field"] == "reason"
    unknown = {"input": {"targetId": "no-such-target", "reason": "receiver fixed"}}
    assert (await gql.error(CLOSE, unknown, world.admin)).code == "NOT_FOUND"
    read = (await gql(CIRCUIT, {"id": world.target_id}, world.admin))["target"]
    assert read["circuitState"] == "OPEN" and await records(gql, world) == []


def _codes(bodies: list[dict[str, Any]]) -> Counter[str]:
    return Counter(
        b["errors"][0]["extensions"]["code"] if b.get("errors") else "ok" for b in bodies
    )


@requires_postgres
async def test_concurrent_closes_one_wins_the_others_are_refused(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    await open_circuit(gql, world)
    operators = [await gql.token(Role.OPERATOR, name=f"op-{i}") for i in range(10)]
    bodies = await asyncio.gather(
        *(gql.raw(CLOSE, closing(world, f"fixed, says {i}"), t) for i, t in enumerate(operators))
    )
    assert _codes(bodies) == Counter({"ok": 1, "TARGET_CIRCUIT_NOT_OPEN": 9})
    assert len(await records(gql, world)) == 1
