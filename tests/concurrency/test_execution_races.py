"""The execution right of an approved proposal under real concurrency: one winner."""

from __future__ import annotations

import asyncio
from collections import Counter

from sqlmodel import func, select

from signoff.models import AuditEvent, ChangeEvent
from tests.concurrency.test_races import codes_of, count
from tests.helpers import GraphQLClient, build_world
from tests.schema.test_executions import BEGIN, REPORT, approved, begin, report


async def test_twenty_concurrent_begins_one_executes(gql: GraphQLClient) -> None:
    world = await build_world(gql, url=None)
    proposal = await approved(world)
    outcome = await codes_of(
        gql, [(BEGIN, begin(proposal, executor=f"racer-{i}"), world.agent) for i in range(20)]
    )
    assert outcome == Counter({"ok": 1, "EXECUTION_CONSUMED": 19})
    started = (
        select(func.count())
        .select_from(AuditEvent)
        .where(
            AuditEvent.action == "proposal.execution_started",
            AuditEvent.target_id == proposal["id"],
        )
    )
    assert await count(gql, started) == 1
    events = (
        select(func.count())
        .select_from(ChangeEvent)
        .where(
            ChangeEvent.kind == "proposal.execution_started",
            ChangeEvent.entity_id == proposal["id"],
        )
    )
    assert await count(gql, events) == 1


async def test_concurrent_reports_settle_once(gql: GraphQLClient) -> None:
    world = await build_world(gql, url=None)
    proposal = await approved(world)
    lease = (await gql(BEGIN, begin(proposal), world.agent))["beginExecution"]["lease"]
    bodies = await asyncio.gather(
        *(gql.raw(REPORT, report(proposal, lease), world.agent) for _ in range(10))
    )
    replayed = Counter(b["data"]["reportExecution"]["replayed"] for b in bodies)
    assert replayed == Counter({True: 9, False: 1})
    applied = (
        select(func.count())
        .select_from(AuditEvent)
        .where(AuditEvent.action == "proposal.applied", AuditEvent.target_id == proposal["id"])
    )
    assert await count(gql, applied) == 1
