"""The per-process event service: the sequencer and the upkeep, in two tasks.

A commit kicks the sequencer to stamp and publish its events. The upkeep ticks every
``relay_seconds`` however busy the process: it stamps what nobody stamped, republishes
what failed to publish, catches the fanout up and applies retention, so a crash or an
outage delays events but never loses them. Two tasks, so that upkeep waiting on the
database never holds back fresh commits (docs/design.md sections 8.2 and 8.6).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.config import Settings, load_audit_signer
from signoff.constants import (
    FEED_PAGE_SIZE,
    FEED_RELAY_GRACE_SECONDS,
    FEED_REORDER_SECONDS,
    FEED_RETENTION_CHECK_SECONDS,
    FEED_STOP_GRACE_SECONDS,
)
from signoff.database import SessionMaker, is_unreachable
from signoff.events import auditlog, feed
from signoff.events.hub import Change, EventHub, MemoryTransport, Transport, Unpublished
from signoff.events.relations import read_relations
from signoff.events.written import WrittenObjects
from signoff.models import AuditCheckpoint, ChangeEvent

logger = logging.getLogger("signoff.events")


class EventService:
    def __init__(
        self,
        hub: EventHub,
        sessionmaker: SessionMaker,
        *,
        reads: SessionMaker | None = None,
        relay_seconds: float,
        retention: timedelta,
        prune_seconds: float = FEED_RETENTION_CHECK_SECONDS,
        stamps_in_writers: bool = False,
        checkpointer: auditlog.Checkpointer | None = None,
        audit_log: bool = True,
        written: WrittenObjects | None = None,
    ) -> None:
        self.hub = hub
        self.sessionmaker = sessionmaker
        # Read-only sessions (``database.read_only``) for what only reads.
        self.reads = reads or sessionmaker
        self.relay_seconds = relay_seconds
        self.retention = retention
        self.prune_seconds = prune_seconds
        self._kicked = asyncio.Event()
        self._stopped = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._last_prune = 0.0
        self._published: list[str] = []  # published, recorded at the next round
        self._stopping = False
        # SQLite serialises writers, so a writer may stamp its own events (``stamp_in``).
        self.stamps_in_writers = stamps_in_writers
        # Signs the audit log's checkpoints when due, at the upkeep's ticks.
        self.checkpointer = checkpointer
        # Off (``SIGNOFF_AUDIT_LOG=0``): audit records get no position, so no proof either.
        self.audit_log = audit_log
        self._stamp_wanted = False  # a kick: committed events wait for their cursors
        self._ready: list[tuple[str, Change]] = []  # stamped by their writers, to publish
        # Writer-stamped events behind a cursor not yet handed over, and since when.
        self._held: list[tuple[str, Change]] = []
        self._held_since: float | None = None
        self._sent_through = 0  # the last cursor published with none missing before it
        # What writers read for their events, until published from here. The hub's gap
        # fill takes from it too (``create_event_service``), so an event a late writer
        # has not handed over yet needs no read either.
        self.written = written if written is not None else WrittenObjects.for_relay(relay_seconds)

    async def kick(self) -> None:
        """After-commit hook: stamp and publish soon, without making the writer wait."""
        self._stamp_wanted = True
        self._kicked.set()

    async def before_commit(
        self, session: AsyncSession, events: Sequence[Mapping[str, Any]]
    ) -> Callable[[], Awaitable[None]]:
        """Just before a writer commits ``events``: attach or hand over what their frames show
        (``feed.written_objects``) and return the after-commit hook that publishes them. Handed
        over now, not in the hook: once the commit is visible, a sequencer round already under
        way may stamp the events before the hook runs (docs/design.md section 8.4)."""
        if self.stamps_in_writers:
            return await self._stamp_in(session)
        if events and self.hub.fanout.subscriber_count:
            self.written.hand_over(await self._read_written(session, feed.as_unstamped(events)))
        return self.kick

    def committed_alone(
        self, events: Sequence[Mapping[str, Any]]
    ) -> Callable[[], Awaitable[None]] | None:
        """``before_commit``'s hook for a writer whose rows went as one statement outside a
        transaction, where it would neither stamp nor read there: none where it would."""
        if self.stamps_in_writers or (events and self.hub.fanout.subscriber_count):
            return None
        return self.kick

    async def _read_written(
        self, session: AsyncSession, events: Sequence[ChangeEvent]
    ) -> dict[str, Mapping[str, Any]]:
        """The objects of a writer's ``events`` that only it could have changed, by event
        id: only those stay what its commit leaves while other writers run."""
        found = await feed.written_objects(session, events, only_written=True)
        return {event.id: objects for event, objects in zip(events, found, strict=True) if objects}

    async def _stamp_in(self, session: AsyncSession) -> Callable[[], Awaitable[None]]:
        """Stamp a writer's events in its own transaction, where writers are serialised (SQLite):
        transaction order is commit order there, so ``feed.stamp_pending``'s rules hold and a
        stamping transaction per commit is saved (docs/design.md section 8.2). The returned hook
        hands the events to the loop to publish without making the writer wait."""
        rows = await feed.stamp_pending(session, audit_log=self.audit_log)
        # Only worth a read where a local subscriber will render the events.
        if rows and self.hub.fanout.subscriber_count:
            written = await feed.written_objects(session, rows)
            await self._add_relations(session, written)
            # Also handed over: if this writer resumes after its commit later than the
            # reorder wait, the events after its own are published first and the hub fills
            # the gap from the database, taking these rather than reading.
            self.written.hand_over(
                {row.id: objects for row, objects in zip(rows, written, strict=True) if objects}
            )
        else:
            written = [{} for _ in rows]
        stamped = [
            (row.id, Change.from_row(row, objects))
            for row, objects in zip(rows, written, strict=True)
        ]

        async def publish() -> None:
            self._ready.extend(stamped)
            self._kicked.set()

        return publish

    async def _add_relations(self, session: AsyncSession, written: list[dict[str, Any]]) -> None:
        """Add to ``written`` the relations of each proposal an agent here waits on, read
        where ``_stamp_in`` reads it: writers are serialised, so they are what the commit
        leaves too, and that agent's frame reads nothing (``events.relations``)."""
        follows = self.hub.fanout.follows
        proposals = {
            proposal.id: proposal
            for objects in written
            if (proposal := objects.get("proposal")) is not None and follows(proposal.id)
        }
        found = await read_relations(session, list(proposals.values()))
        for objects in written:
            proposal = objects.get("proposal")
            if proposal is not None and proposal.id in found:
                objects["relations"] = found[proposal.id]

    async def start(self, *, tick_in_start: bool = True) -> None:
        """Start the hub and both tasks, after a first tick (what an earlier process left
        unstamped or unpublished) unless ``tick_in_start`` is false: then the upkeep's
        first round is that tick, at once, and the caller goes on meanwhile (a worker,
        whose claims need not wait for a backlog's events to be stamped)."""
        async with self.sessionmaker() as session:
            state = await feed.feed_state(session)
            last = state.last_cursor
            self._sent_through = last
            await session.commit()
        await self.hub.start(last)
        if tick_in_start:
            await self.tick()
        self._tasks = [
            asyncio.create_task(self._publish_on_kicks(), name="signoff-events"),
            asyncio.create_task(
                self._keep_up(tick_first=not tick_in_start), name="signoff-events-upkeep"
            ),
        ]

    async def stop(self) -> None:
        """Let both tasks finish their rounds, then stop the hub.

        Cancelling a round midway could interrupt a database statement, which on
        PostgreSQL can leave the connection (and ``stop``) hanging, or publish events
        without marking them published. Only a round stuck past the grace is cancelled.
        """
        if self._tasks:
            self._stopping = True
            self._kicked.set()
            self._stopped.set()
            tasks, self._tasks = set(self._tasks), []
            _, stuck = await asyncio.wait(tasks, timeout=FEED_STOP_GRACE_SECONDS)
            for task in stuck:
                task.cancel()
            if stuck:
                await asyncio.wait(stuck)
        try:
            await self._publish_ready(everything=True)
            await self.mark_published()
        except Exception as exc:  # the relay of the next process re-sends them
            logger.warning("recording published events failed: %s", type(exc).__name__)
        await self.hub.stop()

    async def _publish_on_kicks(self) -> None:
        """Publish what writers stamped, and stamp after a kick, as soon as commits come."""
        while not self._stopping:
            await self._kicked.wait()
            if self._stopping:
                return
            # Cleared before the work: a commit during it kicks the next round.
            self._kicked.clear()
            kicked, self._stamp_wanted = self._stamp_wanted, False
            try:
                await self._publish_ready()
                if kicked:
                    await self.sequence(committed=True)
            except Exception as exc:
                if not is_unreachable(exc):  # an outage is logged once, by the engine
                    logger.warning("publishing change events failed: %s", type(exc).__name__)

    async def _keep_up(self, *, tick_first: bool = False) -> None:
        """Tick every ``relay_seconds`` after the last round ended, kicked or not (the first
        at once if ``tick_first``)."""
        wait = not tick_first
        while not self._stopping:
            if wait:
                # asyncio.timeout, not wait_for: no inner task to outlive a cancellation.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.relay_seconds):
                        await self._stopped.wait()
            wait = True
            if self._stopping:
                return
            try:
                await self.tick()
            except Exception as exc:
                if not is_unreachable(exc):
                    logger.warning("event relay tick failed: %s", type(exc).__name__)

    async def tick(self) -> None:
        """The relay: stamp, republish what was never published, catch up, prune."""
        await self.sequence()
        await self.relay()
        await self.hub.catch_up()
        self.written.drop_old()
        if time.monotonic() - self._last_prune >= self.prune_seconds:
            self._last_prune = time.monotonic()
            await self.prune()
        try:
            await self.checkpoint()
        except Exception as exc:  # the next tick tries again; reconciliation watches the log
            if not is_unreachable(exc):
                logger.warning("signing an audit checkpoint failed: %s", type(exc).__name__)

    async def checkpoint(self, *, force: bool = False) -> AuditCheckpoint | None:
        """Sign an audit checkpoint if one is due (``force``: whenever the log grew).

        Whether one is due is read first without a transaction (a read session): every
        process asks at each tick, and almost always none is, so the tick opens no write
        transaction for it (on SQLite, none takes the write lock). A write session reads
        it again and signs only when one is."""
        if self.checkpointer is None:
            return None
        if not force:
            async with self.reads() as session:
                due = await self.checkpointer.is_due(session)
                await session.commit()
            if not due:
                return None
        async with self.sessionmaker() as session:
            made = await self.checkpointer.run(session, force=force)
            await session.commit()
        return made

    async def sequence(self, *, committed: bool = False) -> int:
        """Stamp every committed, unstamped event in commit order and publish it, one transaction
        a round. ``committed`` (a local commit kicked the round) goes straight to stamping and
        leaves recording what was published to the upkeep's next tick: a statement fewer between
        a commit and its frames."""
        if not committed and not await self._has_pending():
            await self.mark_published()
            return 0
        total = 0
        look_first = False
        while True:
            published: list[str] = []
            if not committed:
                published, self._published = self._published, []
            try:
                async with self.sessionmaker() as session:
                    await feed.mark_published(session, published)
                    if look_first and not await feed.has_pending(session, audit_log=self.audit_log):
                        await session.commit()
                        return total
                    look_first = True
                    stamped = await feed.stamp_pending(session, audit_log=self.audit_log)
                    await session.commit()
            except BaseException:
                self._published[:0] = published  # recorded by a later round
                raise
            if not stamped:
                return total
            await self._publish(stamped, self.written)
            total += len(stamped)
            if len(stamped) < FEED_PAGE_SIZE:
                return total

    async def announce(self) -> int:
        """For a process that serves nobody (a CLI command): stamp what is pending and hand
        it to the transport, so that the serving processes' subscribers learn of it now
        rather than at their relay's next tick. No local fanout; what the transport does
        not take (Redis away, or the embedded hub) the serving processes' relay sends."""
        async with self.sessionmaker() as session:
            stamped = await feed.stamp_pending(session, audit_log=self.audit_log)
            await session.commit()
        if not stamped:
            return 0
        try:
            await self.hub.transport.publish([Change.from_row(row) for row in stamped])
        except Unpublished:
            return 0
        async with self.sessionmaker() as session:
            await feed.mark_published(session, [row.id for row in stamped])
            await session.commit()
        return len(stamped)

    async def _has_pending(self) -> bool:
        """A look that takes no lock, so that a write session is opened only for work."""
        async with self.reads() as session:
            pending = await feed.has_pending(session, audit_log=self.audit_log)
            await session.commit()
        return pending

    async def relay(self) -> int:
        total = 0
        while True:
            await self.mark_published()
            async with self.reads() as session:
                cutoff = clock.now() - timedelta(seconds=FEED_RELAY_GRACE_SECONDS)
                rows = await feed.unpublished(session, cutoff)
                await session.commit()
            if not rows or not await self._publish(rows):
                return total
            total += len(rows)

    async def prune(self) -> int:
        async with self.sessionmaker() as session:
            deleted = await feed.prune(session, clock.now() - self.retention)
            await session.commit()
        if deleted:
            logger.info("pruned %d change events", deleted)
        return deleted

    async def _publish_ready(self, *, everything: bool = False) -> None:
        """Publish what writers stamped, in cursor order; if that fails, the relay re-sends it.
        Writers hand their events over after their commit returns, which may be after the next
        writer's, so events behind a missing cursor wait for it, at most ``FEED_REORDER_SECONDS``
        (a writer cancelled after its commit never hands over; the relay re-sends its events)."""
        pending = sorted([*self._held, *self._ready], key=lambda stamped: stamped[1].cursor)
        self._ready = []
        in_order = _without_gap(pending, self._sent_through)
        now = time.monotonic()
        waited = self._held_since is not None and now - self._held_since >= FEED_REORDER_SECONDS
        if everything or waited:
            in_order = len(pending)
        ready, self._held = pending[:in_order], pending[in_order:]
        for event_id, _ in ready:  # carried by the change itself; no gap fill will need it
            self.written.take(event_id)
        if not self._held:
            self._held_since = None
        elif self._held_since is None:
            self._held_since = now
            asyncio.get_running_loop().call_later(FEED_REORDER_SECONDS, self._kicked.set)
        if ready:
            await self._publish_changes(ready)

    async def _publish(
        self, rows: Sequence[ChangeEvent], written: WrittenObjects | None = None
    ) -> bool:
        """Publish stamped ``rows``, with the objects their writers handed over, if any."""
        if not written:
            changes = [(row.id, Change.from_row(row)) for row in rows]
        else:
            changes = [(row.id, Change.from_row(row, written.take(row.id))) for row in rows]
        return await self._publish_changes(changes)

    async def _publish_changes(self, changes: Sequence[tuple[str, Change]]) -> bool:
        try:
            await self.hub.publish([change for _, change in changes])
        except Unpublished:
            return False
        except Exception as exc:
            logger.warning(
                "publishing %d change events failed (%s); the relay retries",
                len(changes),
                type(exc).__name__,
            )
            return False
        self._published.extend(event_id for event_id, _ in changes)
        self._sent_through = max(self._sent_through, max(c.cursor for _, c in changes))
        return True

    async def mark_published(self) -> None:
        """Record what was published, at the start of the next round rather than at once.

        Writing it right after publishing would run the database (on SQLite, a thread
        that takes the GIL at every socket write) while the subscribers' frames go out.
        The relay only re-sends events older than its grace period, and a repeat is
        dropped by cursor anyway, so recording a round later is safe.
        """
        ids, self._published = self._published, []
        if ids:
            async with self.sessionmaker() as session:
                await feed.mark_published(session, ids)
                await session.commit()


def create_event_service(
    settings: Settings,
    sessionmaker: SessionMaker,
    reads: SessionMaker | None = None,
    *,
    audience: bool = True,
) -> EventService:
    """The embedded hub, or Redis pub/sub when ``SIGNOFF_REDIS_URL`` is set.

    ``reads``: read-only sessions (``database.read_only``) for the catch-up and the
    relay's look-ups; ``sessionmaker``'s own otherwise. ``audience=False``: the process
    has no subscribers (a worker), so its hub publishes and never listens
    (``EventHub``)."""
    readers = reads or sessionmaker
    written = WrittenObjects.for_relay(settings.events_relay_seconds)
    transport: Transport
    if settings.redis_url:
        from signoff.events.redis import RedisTransport

        transport = RedisTransport(settings.redis_url, settings.events_channel)
    else:
        transport = MemoryTransport()

    async def load_after(after: int, through: int | None) -> list[Change]:
        async with readers() as session:
            rows = await feed.events_after(session, after, through=through)
            await session.commit()
        # What this process's writers handed over, where they did: stamped elsewhere, or
        # published here behind a writer that has not returned from its commit yet.
        return [Change.from_row(row, written.take(row.id)) for row in rows]

    hub = EventHub(
        transport,
        load_after,
        buffer=settings.subscriber_buffer,
        audience=audience,
    )
    return EventService(
        hub,
        sessionmaker,
        reads=readers,
        relay_seconds=settings.events_relay_seconds,
        retention=timedelta(days=settings.events_retention_days),
        stamps_in_writers=settings.database_url.startswith("sqlite"),
        checkpointer=auditlog.Checkpointer(
            lambda: load_audit_signer(settings),
            every_records=settings.audit_checkpoint_records,
            every_seconds=settings.audit_checkpoint_seconds,
        ),
        audit_log=settings.audit_log,
        written=written,
    )


def _without_gap(pending: Sequence[tuple[str, Change]], sent_through: int) -> int:
    """How many of ``pending`` (in cursor order) follow ``sent_through`` with no cursor
    missing."""
    expected = sent_through + 1
    for taken, (_, change) in enumerate(pending):
        if change.cursor > expected:
            return taken
        expected = max(expected, change.cursor + 1)
    return len(pending)
