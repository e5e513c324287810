"""The Redis transport's listener against a real Redis: what other processes publish on the
channel, readable or not, never stops it."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pytest
from redis.asyncio import Redis

from signoff import clock
from signoff.events.hub import Change
from signoff.events.redis import RedisTransport
from tests.conftest import REDIS_URL, requires_redis
from tests.events.changes import task_created
from tests.live import unique_channel

pytestmark = requires_redis

SECRET = "hunter2-in-a-snapshot"


def _change(cursor: int) -> Change:
    return task_created(cursor, occurred_at=clock.now(), snapshot={"note": SECRET})


@dataclass
class Listener:
    """What the transport handed to the hub: every delivered change and each resync."""

    transport: RedisTransport
    delivered: list[Change] = field(default_factory=list)
    resyncs: int = 0
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def deliver(self, changes: Sequence[Change]) -> None:
        self.delivered.extend(changes)
        self.arrived.set()

    async def resync(self) -> None:
        self.resyncs += 1


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    assert REDIS_URL is not None
    listening = Listener(RedisTransport(REDIS_URL, unique_channel()))
    await listening.transport.start(listening.deliver, listening.resync)
    for _ in range(100):  # resync runs once the channel is subscribed
        if listening.resyncs:
            break
        await asyncio.sleep(0.02)
    assert listening.resyncs == 1
    yield listening
    await listening.transport.stop()


async def _send(channel: str, message: Any) -> None:
    """Publish as another process would, in whatever format it speaks."""
    assert REDIS_URL is not None
    redis = Redis.from_url(REDIS_URL)
    try:
        await redis.publish(channel, json.dumps(message, default=str))
    finally:
        await redis.aclose()


async def test_a_newer_major_version_is_skipped_and_logged_and_the_listener_goes_on(
    listener: Listener, caplog: pytest.LogCaptureFixture
) -> None:
    looks_readable = {**asdict(_change(1)), "v": 2}  # same fields, other meaning
    renamed = {key: value for key, value in looks_readable.items() if key != "cursor"}
    with caplog.at_level(logging.WARNING, logger="signoff"):
        await _send(listener.transport.channel, [looks_readable])
        await _send(listener.transport.channel, [{**renamed, "position": 2}])
        await listener.transport.publish([_change(3)])
        await asyncio.wait_for(listener.arrived.wait(), timeout=5)
    assert [change.cursor for change in listener.delivered] == [3]
    assert listener.resyncs == 1, "the listener should not have resubscribed"
    assert "wire version 2" in caplog.text
    assert SECRET not in caplog.text


async def test_unknown_fields_and_messages_without_a_version_are_read(
    listener: Listener,
) -> None:
    unversioned = {**asdict(_change(1)), "occurred_at": _change(1).occurred_at.isoformat()}
    await _send(listener.transport.channel, [unversioned, {**unversioned, "cursor": 2, "x": 1}])
    await asyncio.wait_for(listener.arrived.wait(), timeout=5)
    assert [change.cursor for change in listener.delivered] == [1, 2]
    assert listener.resyncs == 1
