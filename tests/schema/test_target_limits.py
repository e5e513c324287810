"""Per-target limits as clients see them: registering with limits, and reading them back."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlmodel import func, select

from signoff.models import Role, Target
from tests.helpers import PAYMENT_SCHEMA, GraphQLClient

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

    reviewer = await gql.token(Role.REVIEWER)  # whoever may see targets sees their limits
    read = (await gql(LIMITS, {"id": registered["id"]}, reviewer))["target"]
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
