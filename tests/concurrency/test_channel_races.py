"""Switching a notification channel off from several places at once (PostgreSQL): each
switch that changed the channel writes one audit row, the others find it done and write
nothing, or are refused once it is removed. (On SQLite writers are serialised, and callers
held between their read and their write would keep each other waiting.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from sqlmodel import col, func, select

from signoff.database import SessionMaker
from signoff.errors import NotificationChannelRemoved
from signoff.models import Actor, AuditEvent, NotificationChannel
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.core.work import UnitOfWork, WorkMaker
from signoff.resolvers.reach import channels as notification_channels
from signoff.resolvers.reach.channels import (
    disable_notification_channel,
    remove_notification_channel,
)
from tests.conftest import requires_postgres
from tests.helpers import GraphQLClient, build_world
from tests.jobs.test_notifications import add_channel

RACERS = 8
Switch = Callable[..., Awaitable[NotificationChannel]]


async def audit_rows(sessionmaker: SessionMaker, action: str) -> int:
    async with sessionmaker() as session:
        count = select(func.count()).where(col(AuditEvent.action) == action)
        return int((await session.exec(count)).one())


async def race(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch, switches: list[Switch]
) -> list[NotificationChannel | BaseException]:
    """Run ``switches`` on one channel at once, each having read it before any writes."""
    world = await build_world(gql)
    channel_id = (await add_channel(gql, world.admin, world.queue_id, "https://example.com/n"))[
        "channel"
    ]["id"]
    async with gql.sessionmaker() as session:
        admin = (await session.exec(select(Actor).where(Actor.name == "admin"))).one()
    viewer = Viewer(actor=admin, queue_ids=frozenset())

    read_channel = notification_channels._channel
    everyone_read = asyncio.Barrier(len(switches))

    async def read_then_wait(work: UnitOfWork, channel_id: str) -> NotificationChannel:
        channel = await read_channel(work, channel_id)
        await everyone_read.wait()
        return channel

    monkeypatch.setattr(notification_channels, "_channel", read_then_wait)
    make = WorkMaker(gql.sessionmaker)

    async def run(switch: Switch) -> NotificationChannel:
        async with make() as work:
            return await switch(work=work, viewer=viewer, channel_id=channel_id)

    return await asyncio.gather(*(run(s) for s in switches), return_exceptions=True)


@requires_postgres
async def test_concurrent_disables_write_one_audit_row(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = await race(gql, monkeypatch, [disable_notification_channel] * RACERS)
    assert all(isinstance(a, NotificationChannel) for a in answers), answers
    assert len({a.disabled_at for a in answers if isinstance(a, NotificationChannel)}) == 1
    assert await audit_rows(gql.sessionmaker, "queue.notification_channel_disabled") == 1


@requires_postgres
async def test_concurrent_disables_and_removes_write_one_audit_row_each_that_changed_it(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    half = RACERS // 2
    answers = await race(
        gql,
        monkeypatch,
        [disable_notification_channel] * half + [remove_notification_channel] * half,
    )
    disables, removes = answers[:half], answers[half:]
    # One remove wins; the other removes, and disables that come after it, are refused.
    assert sum(isinstance(a, NotificationChannel) for a in removes) == 1
    assert all(isinstance(a, NotificationChannel | NotificationChannelRemoved) for a in answers)
    disabled = await audit_rows(gql.sessionmaker, "queue.notification_channel_disabled")
    removed = await audit_rows(gql.sessionmaker, "queue.notification_channel_removed")
    assert removed == 1
    # A disable changed the channel only if it went before the remove: at most one did.
    disabled_answers = [a for a in disables if isinstance(a, NotificationChannel)]
    assert disabled == (1 if disabled_answers else 0)
    assert len({a.disabled_at for a in disabled_answers}) <= 1
