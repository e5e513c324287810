"""Disabling, enabling and removing a queue's notification channel: a channel switched off
gets no new notifications and its waiting ones are cancelled, unsent; each switch is
idempotent, audited once and refused with a stable code (docs/design.md section 5.6)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from sqlmodel import col, func, select, update

from signoff import clock
from signoff.constants import NOTIFICATION_MAX_ATTEMPTS
from signoff.jobs.notifications import send_notifications
from signoff.models import AuditEvent, Incident, Notification, NotificationChannel
from signoff.resolvers.reach.notifications import claim_notifications, record_attempt
from tests.conftest import requires_postgres
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_notifications import add_channel, notifications
from tests.receivers import Answer, Receiver, serve

CHANNEL_FIELDS = "id disabled disabledAt removedAt"
CHANNEL = (
    "query($id: ID!) { node(id: $id) { ... on NotificationChannel { " + CHANNEL_FIELDS + " } } }"
)


async def switch(gql: GraphQLClient, how: str, channel_id: str, token: str) -> dict[str, Any]:
    """``how``: disable, enable or remove; the channel as answered."""
    data = await gql(_switch(how), {"input": {"channelId": channel_id}}, token)
    result: dict[str, Any] = data[f"{how}NotificationChannel"]
    return result


def _switch(how: str) -> str:
    """The mutation ``{how}NotificationChannel`` (disable, enable or remove)."""
    name = f"{how}NotificationChannel"
    return (
        f"mutation($input: {name[0].upper()}{name[1:]}Input!) {{\n"
        f"  {name}(input: $input) {{ {CHANNEL_FIELDS} }}\n}}"
    )


async def audited(worker: Worker, action: str) -> list[AuditEvent]:
    async with worker.services.sessionmaker() as session:
        rows = await session.exec(select(AuditEvent).where(AuditEvent.action == action))
        return list(rows.all())


async def two_channels(gql: GraphQLClient, world: World, first: str, second: str) -> list[str]:
    return [
        (await add_channel(gql, world.admin, world.queue_id, url, kind="SLACK"))["channel"]["id"]
        for url in (first, second)
    ]


async def test_a_disabled_channel_gets_nothing_new_and_its_waiting_notifications_are_cancelled(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver(signed=False)) as off, serve(Receiver(signed=False)) as on:
        world = await build_world(gql)
        off_id, on_id = await two_channels(gql, world, off.url, on.url)
        await world.propose()
        disabled = await switch(gql, "disable", off_id, world.admin)
        assert disabled["disabled"] is True and disabled["disabledAt"] is not None
        assert disabled["removedAt"] is None
        await world.propose()
        assert await send_notifications(worker.ctx) == 2  # both to the channel still on
    assert (len(off.requests), len(on.requests)) == (0, 2)
    states = sorted((n.channel_id, n.state, n.last_error_code) for n in await notifications(worker))
    assert states == sorted(
        [(off_id, "CANCELLED", "CHANNEL_DISABLED"), (on_id, "SENT", None), (on_id, "SENT", None)]
    )
    [event] = await audited(worker, "queue.notification_channel_disabled")
    assert (event.target_type, event.target_id) == ("queue", world.queue_id)
    assert event.details == {"channel_id": off_id, "cancelled_notifications": 1}
    assert len(await audited(worker, "notification.cancelled")) == 1
    assert (await gql(CHANNEL, {"id": off_id}, world.admin))["node"] == disabled


async def test_disabling_a_disabled_channel_answers_it_unchanged_and_writes_nothing(
    gql: GraphQLClient, worker: Worker
) -> None:
    world = await build_world(gql)
    channel_id = (await add_channel(gql, world.admin, world.queue_id, "https://example.com/n"))[
        "channel"
    ]["id"]
    first = await switch(gql, "disable", channel_id, world.admin)
    again = await switch(gql, "disable", channel_id, world.admin)
    assert again == first
    assert len(await audited(worker, "queue.notification_channel_disabled")) == 1


async def test_an_enabled_channel_is_notified_again_and_what_was_cancelled_stays_so(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver(signed=False)) as receiver:
        world = await build_world(gql)
        [channel] = [
            (await add_channel(gql, world.admin, world.queue_id, receiver.url, kind="SLACK"))[
                "channel"
            ]["id"]
        ]
        await world.propose()
        await switch(gql, "disable", channel, world.admin)
        enabled = await switch(gql, "enable", channel, world.admin)
        assert enabled == {"id": channel, "disabled": False, "disabledAt": None, "removedAt": None}
        assert await switch(gql, "enable", channel, world.admin) == enabled  # nothing written
        await world.propose()
        assert await send_notifications(worker.ctx) == 1
    assert len(receiver.requests) == 1
    assert sorted(n.state for n in await notifications(worker)) == ["CANCELLED", "SENT"]
    assert len(await audited(worker, "queue.notification_channel_enabled")) == 1


async def test_a_removed_channel_stays_readable_and_every_further_switch_is_refused(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    channel_id = (
        await add_channel(gql, world.admin, world.queue_id, "https://example.com/n", kind="SLACK")
    )["channel"]["id"]
    await world.propose()
    await switch(gql, "disable", channel_id, world.admin)  # a disabled channel may be removed
    removed = await switch(gql, "remove", channel_id, world.admin)
    assert removed["disabled"] is True and removed["removedAt"] is not None
    for how in ("remove", "disable", "enable"):
        refused = await gql.error(_switch(how), {"input": {"channelId": channel_id}}, world.admin)
        assert refused.code == "NOTIFICATION_CHANNEL_REMOVED", how
        assert refused.errors[0]["extensions"]["removedAt"] == removed["removedAt"]
    assert (await gql(CHANNEL, {"id": channel_id}, world.admin))["node"] == removed
    await world.propose()  # the removed channel is not notified; its rows stay
    [cancelled] = await notifications(worker)
    assert (cancelled.channel_id, cancelled.state) == (channel_id, "CANCELLED")
    assert len(await audited(worker, "queue.notification_channel_removed")) == 1


async def test_switching_a_channel_is_for_operators_and_refusals_change_nothing(
    gql: GraphQLClient, worker: Worker
) -> None:
    world = await build_world(gql)
    channel_id = (await add_channel(gql, world.admin, world.queue_id, "https://example.com/n"))[
        "channel"
    ]["id"]
    for how in ("disable", "enable", "remove"):
        as_reviewer = {"input": {"channelId": channel_id}}
        assert (await gql.error(_switch(how), as_reviewer, world.reviewers[0])).code == "FORBIDDEN"
        unknown = {"input": {"channelId": "no-such-channel"}}
        assert (await gql.error(_switch(how), unknown, world.admin)).code == "NOT_FOUND"
    assert (await gql(CHANNEL, {"id": channel_id}, world.admin))["node"] == {
        "id": channel_id,
        "disabled": False,
        "disabledAt": None,
        "removedAt": None,
    }
    async with worker.services.sessionmaker() as session:
        switches = select(func.count()).where(
            col(AuditEvent.action).like("queue.notification_channel_%"),
            AuditEvent.action != "queue.notification_channel_added",
        )
        assert (await session.exec(switches)).one() == 0


async def test_a_notification_written_as_its_channel_was_disabled_is_cancelled_when_claimed(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    """A task's transaction that read the channel just before it was disabled still writes
    its notification; the claim cancels it instead of sending it."""
    async with serve(Receiver(signed=False)) as receiver:
        world = await build_world(gql)
        channel_id = (
            await add_channel(gql, world.admin, world.queue_id, receiver.url, kind="SLACK")
        )["channel"]["id"]
        await world.propose()
        async with worker.services.sessionmaker() as session:  # as if it came after
            channel = await session.get(NotificationChannel, channel_id)
            assert channel is not None
            channel.disabled_at = clock.now()
            await session.commit()
        assert await send_notifications(worker.ctx) == 0
    assert receiver.requests == []
    [cancelled] = await notifications(worker)
    assert (cancelled.state, cancelled.last_error_code) == ("CANCELLED", "CHANNEL_DISABLED")
    assert cancelled.lease_expires_at is None


async def test_disabling_a_failing_channel_stops_its_retries_before_an_incident(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver([Answer(503)], signed=False)) as failing:
        world = await build_world(gql)
        channel_id = (
            await add_channel(gql, world.admin, world.queue_id, failing.url, kind="SLACK")
        )["channel"]["id"]
        await world.propose()
        assert await send_notifications(worker.ctx) == 1
        await switch(gql, "disable", channel_id, world.admin)
        for _ in range(5):
            frozen_clock.advance(3600)
            assert await send_notifications(worker.ctx) == 0
    assert len(failing.requests) == 1
    [notification] = await notifications(worker)
    assert (notification.state, notification.last_error_code) == ("CANCELLED", "CHANNEL_DISABLED")
    async with worker.services.sessionmaker() as session:
        assert (await session.exec(select(Incident))).all() == []


async def test_a_failed_notification_is_logged_with_its_channel_and_code_only(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serve(Receiver([Answer(503)], signed=False)) as failing:
        world = await build_world(gql)
        url = f"{failing.url}?token=s3cret-query"
        channel_id = (await add_channel(gql, world.admin, world.queue_id, url, kind="SLACK"))[
            "channel"
        ]["id"]
        await world.propose({"amount": 987654, "currency": "EUR"})
        with caplog.at_level(logging.WARNING, logger="signoff"):
            assert await send_notifications(worker.ctx) == 1
    [notification] = await notifications(worker)
    [line] = [r for r in caplog.records if r.name == "signoff.jobs"]
    assert line.levelno == logging.WARNING
    message = line.getMessage()
    assert notification.id in message and channel_id in message and "HTTP_503" in message
    for secret in ("s3cret-query", "token=", failing.url, "987654", "Payments"):
        assert secret not in caplog.text


@pytest.mark.parametrize("how", ["disable", "remove"])
async def test_a_last_attempt_in_flight_as_its_channel_is_switched_off_opens_no_incident(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
    caplog: pytest.LogCaptureFixture,
    how: str,
) -> None:
    """Issue 35: the last attempt was sent, the channel was disabled (or removed) while it
    waited for its answer, and its failure still opened an incident about a channel nobody
    wants any more. The failure is recorded and logged as before, with no incident."""
    last = NOTIFICATION_MAX_ATTEMPTS
    script = [Answer(503)] * (last - 1) + [Answer(503, hang=True)]
    async with serve(Receiver(script, signed=False)) as failing:
        world = await build_world(gql)
        channel_id = (
            await add_channel(gql, world.admin, world.queue_id, failing.url, kind="SLACK")
        )["channel"]["id"]
        await world.propose()
        for attempt in range(1, last):
            assert await send_notifications(worker.ctx) == 1
            frozen_clock.advance(15 * 2 ** (attempt - 1))  # jitter pinned: the upper bound
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="signoff.jobs"):
            sending = asyncio.create_task(send_notifications(worker.ctx))
            while failing.open == 0:  # the last attempt is at the receiver, unanswered
                assert not sending.done(), sending
                await asyncio.sleep(0.01)
            await switch(gql, how, channel_id, world.admin)
            failing.release()
            assert await sending == 1
    assert [r.attempt for r in failing.requests] == list(range(1, last + 1))
    [notification] = await notifications(worker)
    assert (notification.state, notification.last_error_code) == ("FAILED", "HTTP_503")
    assert [a.details["attempt"] for a in await audited(worker, "notification.failed")] == [last]
    [line] = [r.getMessage() for r in caplog.records if r.name == "signoff.jobs"]
    assert notification.id in line and "HTTP_503" in line and f"attempt {last}" in line
    async with worker.services.sessionmaker() as session:
        assert (await session.exec(select(Incident))).all() == []


@requires_postgres
async def test_a_last_failure_recorded_while_a_disable_commits_waits_for_it(
    gql: GraphQLClient, worker: Worker
) -> None:
    """The outcome of a last attempt and a disable of its channel at the same moment: the
    outcome waits for the disable that holds the channel's row, then sees it (PostgreSQL;
    SQLite's one writer orders them already)."""
    world = await build_world(gql)
    channel_id = (
        await add_channel(gql, world.admin, world.queue_id, "http://127.0.0.1:9/hook", kind="SLACK")
    )["channel"]["id"]
    await world.propose()
    async with worker.services.sessionmaker() as session:
        await session.exec(update(Notification).values(attempt_count=NOTIFICATION_MAX_ATTEMPTS - 1))
        await session.commit()
    async with worker.services.work() as work:
        [outgoing] = await claim_notifications(work, public_url="http://127.0.0.1")
    assert outgoing.attempt == NOTIFICATION_MAX_ATTEMPTS

    async def record() -> None:
        async with worker.services.work() as work:
            await record_attempt(work, outgoing, "HTTP_503")

    async with worker.services.sessionmaker() as disabling:
        await disabling.exec(
            update(NotificationChannel)
            .where(col(NotificationChannel.id) == channel_id)
            .values(disabled_at=clock.now())
        )
        recording = asyncio.create_task(record())
        await asyncio.sleep(0.5)
        assert not recording.done(), "the outcome did not wait for the disable"
        await disabling.commit()
    await recording
    [notification] = await notifications(worker)
    assert (notification.state, notification.last_error_code) == ("FAILED", "HTTP_503")
    async with worker.services.sessionmaker() as session:
        assert (await session.exec(select(Incident))).all() == []
