"""A hub without an audience (a worker's) publishes every change to the transport, and
neither listens to other processes nor reads the database for anyone."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from signoff.events.hub import Change, Deliver, EventHub, Resync
from tests.events.changes import task_created


class RecordingTransport:
    """What the hub asked of its transport."""

    def __init__(self) -> None:
        self.published: list[int] = []
        self.listening = False

    async def start(self, deliver: Deliver, resync: Resync) -> None:
        self.listening = True

    async def publish(self, changes: Sequence[Change]) -> None:
        self.published.extend(change.cursor for change in changes)

    async def stop(self) -> None:
        self.listening = False


async def test_a_hub_without_an_audience_only_publishes() -> None:
    loads: list[tuple[int, int | None]] = []

    async def load_after(after: int, through: int | None) -> list[Change]:
        loads.append((after, through))
        return [task_created(cursor) for cursor in range(after + 1, (through or after) + 1)]

    transport = RecordingTransport()
    hub = EventHub(transport, load_after, buffer=10, audience=False)
    await hub.start(3)
    # Cursors 4-6 were published by other processes: a hub with an audience fills them in.
    await hub.publish([task_created(7), task_created(8)])
    await hub.catch_up()
    assert transport.published == [7, 8]
    assert not transport.listening
    assert loads == []
    with pytest.raises(RuntimeError):
        hub.subscribe(lambda change: True)
    await hub.stop()


async def test_a_hub_with_an_audience_fills_gaps_for_its_subscribers() -> None:
    """The same calls on a serving process's hub: it listens, and a gap is read."""

    async def load_after(after: int, through: int | None) -> list[Change]:
        return [task_created(cursor) for cursor in range(after + 1, (through or after) + 1)]

    transport = RecordingTransport()
    hub = EventHub(transport, load_after, buffer=10)
    await hub.start(3)
    subscriber = hub.subscribe(lambda change: True)
    await hub.publish([task_created(7), task_created(8)])
    assert transport.listening
    assert [(await subscriber.get()).cursor for _ in range(5)] == [4, 5, 6, 7, 8]
    await hub.stop()
