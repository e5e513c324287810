"""The event hub: one ordered, gap-free stream of changes per process, fanned out to
local subscribers, each with a bounded buffer.

Transports only move changes between processes (in memory for the embedded
default, Redis pub/sub when distributed). Whatever a transport loses, reorders or
duplicates, ``Fanout`` repairs: cursors are dense, so a change above ``last + 1``
means a gap, which it fills from the database before delivering; anything at or
below ``last`` is a duplicate and is dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Protocol

from signoff.errors import SubscriberTooSlow
from signoff.models import ChangeEvent
from signoff.models.change_event import ACCESS_KINDS

logger = logging.getLogger("signoff.events")


@dataclass(frozen=True)
class Change:
    """A stamped change event as it travels between processes and to subscribers."""

    cursor: int
    kind: str
    entity_type: str
    entity_id: str
    queue_id: str | None
    proposal_id: str | None
    actor_id: str | None
    occurred_at: datetime
    snapshot: dict[str, Any] = field(default_factory=dict)
    # The entity's version after the change; None for unversioned entities, and on the
    # wire from processes that predate versions.
    entity_version: int | None = None
    # Drafts: ``<account id>:<session id>``; None elsewhere and from older processes.
    session_key: str | None = None
    # The proposal, task or draft the event points at, as records read in the writing
    # transaction (``feed.written_objects``), so that a frame needs no read of its own.
    # Keyed "proposal", "task", "draft", and "relations" for the proposal's, where they
    # were read too (``events.relations``). The records travel to other processes
    # beside the change's fields (``events.wire``); the relations stay in this one.
    written: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_row(cls, row: ChangeEvent, written: Mapping[str, Any] | None = None) -> Change:
        assert row.cursor is not None  # only stamped events travel
        return cls(
            cursor=row.cursor,
            kind=row.kind,
            entity_type=row.entity_type,
            entity_id=row.entity_id,
            queue_id=row.queue_id,
            proposal_id=row.proposal_id,
            actor_id=row.actor_id,
            occurred_at=row.occurred_at,
            snapshot=row.snapshot,
            entity_version=row.entity_version,
            session_key=row.session_key,
            written=written or {},
        )

    def to_wire(self) -> dict[str, Any]:
        # A shallow copy, not ``asdict``: that deep-copies the snapshot, which is never
        # changed here, and was the most expensive part of publishing a batch.
        wire = {**vars(self), "occurred_at": self.occurred_at.isoformat()}
        del wire["written"]
        return wire

    @classmethod
    def from_wire(cls, data: dict[str, Any], written: Mapping[str, Any] | None = None) -> Change:
        """Read a change another process published; fields this version does not know are
        ignored and missing optional ones take their defaults, so mixed versions interoperate.
        ``written``: the records the message carried (``events.wire``)."""
        values = {key: value for key, value in data.items() if key in _WIRE_FIELDS}
        occurred_at = datetime.fromisoformat(data["occurred_at"])
        return cls(**{**values, "occurred_at": occurred_at, "written": written or {}})


# What ``from_wire`` takes: every field but the in-process ``written``. Found once
# rather than per change, as an API process listening to Redis reads every change.
_WIRE_FIELDS = frozenset(f.name for f in fields(Change)) - {"written"}

LoadAfter = Callable[[int, int | None], Awaitable[list[Change]]]
Deliver = Callable[[Sequence[Change]], Awaitable[None]]
Resync = Callable[[], Awaitable[None]]


class Subscriber:
    """One subscription's bounded buffer; overflowing it ends the subscription.

    A subscriber with a ``proposal_id`` wants nothing of any other proposal, but for the
    changes of access (``ACCESS_KINDS``), which may concern its members whatever they are
    about: the fanout offers it nothing else, without calling ``match``.
    """

    def __init__(
        self, match: Callable[[Change], bool], buffer: int, proposal_id: str | None = None
    ) -> None:
        self.match = match
        self.proposal_id = proposal_id
        self.overflowed = False
        # One extra slot so the overflow marker always fits.
        self._queue: asyncio.Queue[Change | None] = asyncio.Queue(buffer + 1)
        self._buffer = buffer

    def offer(self, change: Change) -> bool:
        """Buffer ``change`` without waiting; ``False`` once the subscriber overflowed."""
        if self.overflowed:
            return False
        if self._queue.qsize() < self._buffer:
            self._queue.put_nowait(change)
            return True
        self.overflowed = True
        while not self._queue.empty():  # free the memory now, not when the socket closes
            self._queue.get_nowait()
        self._queue.put_nowait(None)
        return False

    async def get(self) -> Change:
        change = await self._queue.get()
        if change is None:
            raise SubscriberTooSlow()
        return change


class Fanout:
    """Delivers changes in cursor order, exactly once, to every matching local subscriber.

    Subscribers to one proposal (an agent waiting on its own) are kept by proposal id: a
    change reaches them through one dictionary lookup, however many of them there are,
    rather than a ``match`` call on each.
    """

    def __init__(self, load_after: LoadAfter) -> None:
        self.last = 0
        self._load_after = load_after
        self._subscribers: set[Subscriber] = set()  # every subscriber
        self._unrouted: set[Subscriber] = set()  # those offered every change
        self._by_proposal: dict[str, set[Subscriber]] = {}
        self._listeners: list[Callable[[Change], None]] = []
        self._lock = asyncio.Lock()

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)

    def follows(self, proposal_id: str) -> bool:
        """Whether a subscriber here follows this one proposal (an agent waiting on it)."""
        return proposal_id in self._by_proposal

    def add(self, subscriber: Subscriber) -> None:
        self._subscribers.add(subscriber)
        if subscriber.proposal_id is None:
            self._unrouted.add(subscriber)
        else:
            self._by_proposal.setdefault(subscriber.proposal_id, set()).add(subscriber)

    def listen(self, listener: Callable[[Change], None]) -> None:
        """Call ``listener`` with every change as it is delivered, before any subscriber
        sees it (for caches that a change makes stale)."""
        self._listeners.append(listener)

    def discard(self, subscriber: Subscriber) -> None:
        self._subscribers.discard(subscriber)
        self._unrouted.discard(subscriber)
        key = subscriber.proposal_id
        if key is not None and key in self._by_proposal:
            routed = self._by_proposal[key]
            routed.discard(subscriber)
            if not routed:
                del self._by_proposal[key]

    def candidates(self, change: Change) -> list[Subscriber]:
        """The subscribers that may want ``change``: all of them for a change of access,
        else those offered every change and those of its proposal."""
        if change.kind in ACCESS_KINDS:
            return list(self._subscribers)
        routed = self._by_proposal.get(change.proposal_id) if change.proposal_id else None
        if routed is None:
            return list(self._unrouted)
        return [*self._unrouted, *routed]

    async def offer(self, changes: Sequence[Change]) -> None:
        async with self._lock:
            for change in sorted(changes, key=lambda c: c.cursor):
                if change.cursor <= self.last:
                    continue
                if change.cursor > self.last + 1:
                    await self._fill(change.cursor - 1)
                await self._deliver(change)

    async def catch_up(self) -> None:
        """Deliver whatever the database holds beyond ``last`` (after a transport outage)."""
        async with self._lock:
            await self._fill(None)

    async def _fill(self, through: int | None) -> None:
        while True:
            missing = await self._load_after(self.last, through)
            for change in missing:
                await self._deliver(change)
            if not missing or (through is not None and self.last >= through):
                if through is not None:
                    # Retention may have deleted part of a very old gap; never stall on it.
                    self.last = max(self.last, through)
                return

    async def _deliver(self, change: Change) -> None:
        self.last = change.cursor
        for listener in self._listeners:
            listener(change)
        for subscriber in self.candidates(change):
            if subscriber.match(change) and not subscriber.offer(change):
                self.discard(subscriber)
        # Let subscribers take and send what they were given before the next change of a
        # burst (a batch, a gap fill, a catch-up): a fast consumer keeps its buffer near
        # empty and only one that really falls behind overflows.
        await asyncio.sleep(0)


class Unpublished(Exception):
    """The transport could not publish (Redis is away); it has logged that, once per
    outage. The changes stay unpublished in the database, and the relay sends them later."""


class Transport(Protocol):
    async def start(self, deliver: Deliver, resync: Resync) -> None: ...

    async def publish(self, changes: Sequence[Change]) -> None: ...

    async def stop(self) -> None: ...


class MemoryTransport:
    """The embedded default: one process, so the local fanout is the whole audience."""

    async def start(self, deliver: Deliver, resync: Resync) -> None:
        return None

    async def publish(self, changes: Sequence[Change]) -> None:
        return None

    async def stop(self) -> None:
        return None


class EventHub:
    """Publish and subscribe, whatever the transport."""

    def __init__(
        self,
        transport: Transport,
        load_after: LoadAfter,
        *,
        buffer: int,
        audience: bool = True,
    ) -> None:
        self.transport = transport
        self.fanout = Fanout(load_after)
        self.buffer = buffer
        # Without an audience (a worker: no subscriber ever joins), the hub only publishes:
        # it neither listens to other processes nor fills gaps from the database, work
        # whose only readers would be subscribers.
        self.audience = audience

    async def start(self, last_cursor: int) -> None:
        self.fanout.last = last_cursor
        if self.audience:
            await self.transport.start(self.fanout.offer, self.fanout.catch_up)

    async def stop(self) -> None:
        await self.transport.stop()

    async def publish(self, changes: Sequence[Change]) -> None:
        """Deliver locally at once, then to other processes; raises if the transport failed."""
        if self.audience:
            await self.fanout.offer(changes)
        await self.transport.publish(changes)

    async def catch_up(self) -> None:
        """Deliver to local subscribers what the database holds beyond the last delivered."""
        if self.audience:
            await self.fanout.catch_up()

    def subscribe(
        self, match: Callable[[Change], bool], proposal_id: str | None = None
    ) -> Subscriber:
        """A subscriber offered each change ``match`` accepts (see ``Subscriber`` for
        ``proposal_id``)."""
        if not self.audience:
            raise RuntimeError("This event hub has no audience: it only publishes.")
        subscriber = Subscriber(match, self.buffer, proposal_id)
        self.fanout.add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self.fanout.discard(subscriber)
