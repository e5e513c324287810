"""Queue reminders (``task.due_soon``) and queue statistics, on a frozen clock
(docs/design.md section 5.4)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlmodel import col, select

from signoff import clock
from signoff.jobs.delivery import expire_due_proposals, send_reminders
from signoff.models import AuditEvent, Role
from tests.helpers import CREATE_QUEUE, GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_feed_events import feed

STATS = """
query($id: ID!) {
  queueStats(queueId: $id) {
    openItems oldestAgeSeconds pastSla medianDecisionSeconds decidedInWindow windowSeconds
  }
}
"""


async def reminder_details(worker: Worker, task_id: str) -> list[dict[str, Any]]:
    async with worker.services.sessionmaker() as session:
        rows = await session.exec(
            select(AuditEvent.details)
            .where(AuditEvent.target_id == task_id, AuditEvent.action == "task.due_soon")
            .order_by(col(AuditEvent.created_at), col(AuditEvent.id))
        )
        return list(rows.all())


async def test_reminders_come_at_the_queues_offsets_once_each(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql, queue_options={"reminderPercents": [90, 50]})
    frozen_clock.current = frozen_clock.current.replace(microsecond=0)
    task = (await world.propose(expiresInSeconds=1000))["task"]

    frozen_clock.advance(499)
    assert await send_reminders(worker.ctx) == 0
    frozen_clock.advance(1)
    assert await send_reminders(worker.ctx) == 1
    assert await send_reminders(worker.ctx) == 0
    frozen_clock.advance(399)
    assert await send_reminders(worker.ctx) == 0
    frozen_clock.advance(1)
    assert await send_reminders(worker.ctx) == 1
    frozen_clock.advance(99)
    assert await send_reminders(worker.ctx) == 0  # no offsets left

    details = await reminder_details(worker, task["id"])
    assert [(d["percent"], d["seconds_left"]) for d in details] == [(50, 500), (90, 100)]
    due_soon = [e for e in await feed(worker, task["id"]) if e.kind == "task.due_soon"]
    assert [e.snapshot["state"] for e in due_soon] == ["OPEN", "OPEN"]
    assert all(e.queue_id == world.queue_id for e in due_soon)


async def test_a_decided_task_is_not_reminded(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql, queue_options={"reminderPercents": [50]})
    proposal = (await world.propose(expiresInSeconds=1000))["proposal"]
    await world.decide(world.reviewers[0], proposal)
    frozen_clock.advance(600)
    assert await send_reminders(worker.ctx) == 0


async def test_an_escalated_task_is_reminded_afresh_in_its_new_queue(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    admin = await gql.token(Role.ADMIN, name="owner")
    created = await gql(
        CREATE_QUEUE,
        {"input": {"slug": "night-shift", "name": "Night", "reminderPercents": [50]}},
        admin,
    )
    policy = {
        "action": "ESCALATE",
        "escalation": [{"queueId": created["createQueue"]["id"], "deadlineSeconds": 600}],
    }
    world = await build_world(gql, deadlinePolicy=policy)
    task = (await world.propose(expiresInSeconds=60))["task"]
    frozen_clock.advance(60)
    assert await send_reminders(worker.ctx) == 0  # the first queue has no reminders
    assert await expire_due_proposals(worker.ctx) == 1
    frozen_clock.advance(299)
    assert await send_reminders(worker.ctx) == 0
    frozen_clock.advance(1)
    assert await send_reminders(worker.ctx) == 1
    [reminded] = [e for e in await feed(worker, task["id"]) if e.kind == "task.due_soon"]
    assert reminded.queue_id == created["createQueue"]["id"]


async def test_concurrent_sweeps_send_a_reminder_once(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql, queue_options={"reminderPercents": [50]})
    task = (await world.propose(expiresInSeconds=1000))["task"]
    frozen_clock.advance(500)
    assert sum(await asyncio.gather(*(send_reminders(worker.ctx) for _ in range(6)))) == 1
    assert len(await reminder_details(worker, task["id"])) == 1


async def test_reminder_offsets_are_checked(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN, name="owner")
    for percents in ([0], [100], [10, 20, 30, 40, 50, 60]):
        refused = await gql.error(
            CREATE_QUEUE,
            {"input": {"slug": "bad", "name": "Bad", "reminderPercents": percents}},
            admin,
        )
        assert refused.code == "VALIDATION_FAILED", percents


async def stats(world: World, token: str) -> dict[str, Any]:
    data = await world.gql(STATS, {"id": world.queue_id}, token)
    result: dict[str, Any] = data["queueStats"]
    return result


async def test_queue_stats(gql: GraphQLClient, frozen_clock: clock.FrozenClock) -> None:
    world = await build_world(gql)
    frozen_clock.current = frozen_clock.current.replace(microsecond=0)
    assert await stats(world, world.admin) == {
        "openItems": 0,
        "oldestAgeSeconds": None,
        "pastSla": 0,
        "medianDecisionSeconds": None,
        "decidedInWindow": 0,
        "windowSeconds": 86400,
    }
    quick = (await world.propose(expiresInSeconds=3600))["proposal"]
    frozen_clock.advance(100)
    slow = (await world.propose(expiresInSeconds=3600))["proposal"]
    await world.propose(expiresInSeconds=60)
    frozen_clock.advance(20)
    await world.decide(world.reviewers[0], quick)  # decided 120 s after it came
    frozen_clock.advance(280)
    await world.decide(world.reviewers[0], slow)  # 300 s
    await world.propose(expiresInSeconds=3600)
    assert await stats(world, world.reviewers[1]) == {
        "openItems": 2,
        "oldestAgeSeconds": 300,
        "pastSla": 1,  # the 60 s one, not yet swept
        "medianDecisionSeconds": 210.0,
        "decidedInWindow": 2,
        "windowSeconds": 86400,
    }
    frozen_clock.advance(86400 - 280 + 1)  # the first decision (280 s ago) leaves the window
    assert (await stats(world, world.admin))["decidedInWindow"] == 1

    other = await gql(CREATE_QUEUE, {"input": {"slug": "other", "name": "Other"}}, world.admin)
    assert other["createQueue"]["slug"] == "other"
    outsider = await gql.token(Role.REVIEWER, name="outsider", queues=["other"])
    refused = await gql.error(STATS, {"id": world.queue_id}, outsider)
    assert refused.code == "NOT_FOUND"  # as for a queue that does not exist
    agent = await gql.error(STATS, {"id": world.queue_id}, world.agent)
    assert agent.code == "FORBIDDEN"


async def test_a_queue_shows_its_reminder_offsets_in_order(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN, name="owner")
    created = await gql(
        CREATE_QUEUE,
        {"input": {"slug": "ordered", "name": "Ordered", "reminderPercents": [75, 25, 75]}},
        admin,
    )
    queue_id = created["createQueue"]["id"]
    data = await gql(
        "query($id: ID!) { queue(id: $id) { reminderPercents } }", {"id": queue_id}, admin
    )
    assert data["queue"] == {"reminderPercents": [25, 75]}
