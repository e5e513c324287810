"""The change feed in the database: cursors in commit order, dense, pruned by retention."""

from __future__ import annotations

import asyncio
import random
import uuid
from dataclasses import replace
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.config import Settings
from signoff.database import SessionMaker, create_sessionmaker
from signoff.events import create_event_service, feed
from signoff.events.hub import Change, Fanout, Subscriber
from signoff.models import ChangeEvent, ChangeKind
from tests.conftest import requires_postgres


def _record(session: AsyncSession, label: str) -> None:
    """A change event in ``session``'s transaction, written when it flushes (business
    rules' events are written at commit: these tests place the insert themselves)."""
    session.add(
        ChangeEvent(
            kind=ChangeKind.TASK_CREATED.value,
            entity_type="task",
            entity_id=str(uuid.uuid4()),
            queue_id="q",
            snapshot={"label": label},
        )
    )


async def _stamp(sessionmaker: SessionMaker) -> list[tuple[int, str]]:
    async with sessionmaker() as session:
        stamped = await feed.stamp_pending(session)
        await session.commit()
    return [(e.cursor or 0, e.snapshot["label"]) for e in stamped]


async def _visible_after(sessionmaker: SessionMaker, after: int) -> list[tuple[int, str]]:
    async with sessionmaker() as session:
        rows = await feed.events_after(session, after)
        await session.commit()
    return [(e.cursor or 0, e.snapshot["label"]) for e in rows]


@requires_postgres
async def test_a_transaction_that_commits_late_gets_a_later_cursor(
    sessionmaker: SessionMaker,
) -> None:
    """Writer A inserts first but commits last; B's event is delivered in between.

    With an insert-time sequence A would hold the lower number and a subscriber that
    resumed after B's cursor would never see A. Stamped in commit order, A comes after B.
    """
    async with sessionmaker() as a, sessionmaker() as b:
        _record(a, "A")
        await a.flush()  # A's row exists, uncommitted, before B's
        _record(b, "B")
        await b.commit()
        assert await _stamp(sessionmaker) == [(1, "B")]  # A is invisible, not skipped
        delivered = await _visible_after(sessionmaker, 0)
        assert delivered == [(1, "B")]
        await a.commit()
    assert await _stamp(sessionmaker) == [(2, "A")]
    assert await _visible_after(sessionmaker, 1) == [(2, "A")]  # resuming after B finds A


@requires_postgres
async def test_crossing_writers_never_place_an_event_below_a_delivered_cursor(
    engine: AsyncEngine,
    clean_database: None,
) -> None:
    """Twenty writers hold their transactions open for random, crossing spans while a
    sequencer stamps and a subscriber polls; the subscriber sees every event exactly
    once, in a dense, increasing run of cursors, and never one below its position."""
    sessionmaker = create_sessionmaker(engine)
    writers = 20
    rng = random.Random(7)
    done = asyncio.Event()
    inserted: list[int] = []
    committed: list[int] = []

    async def writer(i: int) -> None:
        async with sessionmaker() as session:
            await asyncio.sleep(rng.uniform(0, 0.2))
            _record(session, f"w{i}")
            await session.flush()
            inserted.append(i)
            await asyncio.sleep(rng.uniform(0, 0.4))  # hold the transaction open
            await session.commit()
            committed.append(i)

    async def sequencer() -> None:
        while not done.is_set():
            await _stamp(sessionmaker)
            await asyncio.sleep(0.005)
        await _stamp(sessionmaker)

    seen: list[tuple[int, str]] = []

    async def subscriber() -> None:
        position = 0
        while len(seen) < writers:
            for cursor, label in await _visible_after(sessionmaker, position):
                assert cursor == position + 1, "a gap or an event below the position"
                position = cursor
                seen.append((cursor, label))
            await asyncio.sleep(0.005)

    watching = asyncio.create_task(subscriber())
    # Two sequencers, as two processes would run: the state row lock serialises them.
    stamping = [asyncio.create_task(sequencer()) for _ in range(2)]
    await asyncio.gather(*(writer(i) for i in range(writers)))
    done.set()
    await asyncio.gather(*stamping)
    assert inserted != committed, "the writers' transactions should have crossed"
    await asyncio.wait_for(watching, timeout=10)
    assert sorted(label for _, label in seen) == sorted(f"w{i}" for i in range(writers))
    assert [c for c, _ in seen] == list(range(1, writers + 1))


async def test_retention_prunes_through_a_cursor(sessionmaker: SessionMaker) -> None:
    async with sessionmaker() as session:
        for i in range(3):
            _record(session, f"e{i}")
        await session.commit()
    await _stamp(sessionmaker)
    async with sessionmaker() as session:
        deleted = await feed.prune(session, clock.now() + timedelta(seconds=1))
        await session.commit()
        state = await feed.feed_state(session)
    assert deleted == 3
    assert (state.last_cursor, state.pruned_through) == (3, 3)
    async with sessionmaker() as session:
        _record(session, "after")
        await session.commit()
    assert await _stamp(sessionmaker) == [(4, "after")]  # cursors never restart


def _change(cursor: int, queue_id: str = "q") -> Change:
    return Change(
        cursor=cursor,
        kind="task.created",
        entity_type="task",
        entity_id=f"t{cursor}",
        queue_id=queue_id,
        proposal_id=None,
        actor_id=None,
        occurred_at=clock.now(),
    )


async def test_fanout_fills_gaps_from_the_store_and_drops_duplicates() -> None:
    store = {c: _change(c) for c in range(1, 8)}

    async def load_after(after: int, through: int | None) -> list[Change]:
        top = through if through is not None else max(store)
        return [store[c] for c in range(after + 1, top + 1)]

    fanout = Fanout(load_after)
    sub = Subscriber(lambda c: True, buffer=100)
    fanout.add(sub)
    await fanout.offer([_change(1)])
    await fanout.offer([_change(4), _change(3)])  # 2 was lost, 3 and 4 arrive reordered
    await fanout.offer([_change(2), _change(4)])  # late and duplicate
    await fanout.catch_up()  # a transport outage: 5..7 only in the store
    got = [(await sub.get()).cursor for _ in range(7)]
    assert got == [1, 2, 3, 4, 5, 6, 7]


async def test_a_slow_subscriber_overflows_without_affecting_others() -> None:
    async def load_after(after: int, through: int | None) -> list[Change]:
        return []

    fanout = Fanout(load_after)
    slow = Subscriber(lambda c: True, buffer=5)
    fast = Subscriber(lambda c: True, buffer=5)
    fanout.add(slow)
    fanout.add(fast)
    received = []
    for cursor in range(1, 21):
        await fanout.offer([_change(cursor)])
        received.append((await fast.get()).cursor)
    assert received == list(range(1, 21))
    assert slow.overflowed and fanout.subscriber_count == 1
    try:
        await slow.get()
    except Exception as exc:
        assert getattr(exc, "code", None) == "SUBSCRIBER_TOO_SLOW"
    else:
        raise AssertionError("the slow subscriber should have been cut off")


async def test_the_relay_publishes_what_was_committed_without_a_publisher(
    sessionmaker: SessionMaker, settings: Settings
) -> None:
    """A crash between commit and publish: the next process to start relays it."""
    async with sessionmaker() as session:  # no event service in this session
        _record(session, "orphan")
        await session.commit()
    service = create_event_service(settings, sessionmaker)
    await service.start()
    await service.stop()
    async with sessionmaker() as session:
        rows = await feed.events_after(session, 0)
    assert [(r.cursor, r.published_at is not None) for r in rows] == [(1, True)]


async def test_a_burst_larger_than_the_buffer_reaches_a_fast_subscriber() -> None:
    """A catch-up of 1,000 events after an outage, against buffers of 10."""
    store = {c: _change(c) for c in range(1, 1001)}

    async def load_after(after: int, through: int | None) -> list[Change]:
        top = min(through if through is not None else 1000, after + 500)
        return [store[c] for c in range(after + 1, top + 1)]

    fanout = Fanout(load_after)
    fast = Subscriber(lambda c: True, buffer=10)
    fanout.add(fast)
    received: list[int] = []

    async def consume() -> None:
        while len(received) < 1000:
            received.append((await fast.get()).cursor)

    consuming = asyncio.create_task(consume())
    await fanout.catch_up()
    await asyncio.wait_for(consuming, timeout=5)
    assert received == list(range(1, 1001)) and not fast.overflowed


def _versioned(entity_id: str, version: int | None) -> ChangeEvent:
    return ChangeEvent(
        kind="task.claimed",
        entity_type="task",
        entity_id=entity_id,
        entity_version=version,
        snapshot={"label": f"{entity_id}{version or ''}"},
    )


def test_in_entity_order_moves_only_an_entitys_own_events_among_their_places() -> None:
    events = [
        _versioned("q", None),
        _versioned("x", 3),
        _versioned("y", 1),
        _versioned("x", 1),
        _versioned("z", None),
        _versioned("x", 2),
    ]
    labels = [e.snapshot["label"] for e in feed.in_entity_order(events)]
    assert labels == ["q", "x1", "y1", "x2", "z", "x3"]


async def test_a_page_limit_never_leaves_an_earlier_version_for_a_later_run(
    sessionmaker: SessionMaker,
) -> None:
    """By the clocks x v2 comes first, then y, then x v1 (x v1's writer's clock ran ahead);
    a page of two still takes x v1 along with x v2, and stamps it first."""
    base = clock.now()
    async with sessionmaker() as session:
        for entity_id, version, seconds in (("x", 2, 0), ("y", 1, 1), ("x", 1, 9)):
            event = _versioned(entity_id, version)
            event.occurred_at = base + timedelta(seconds=seconds)
            session.add(event)
        await session.commit()
    async with sessionmaker() as session:
        stamped = await feed.stamp_pending(session, limit=2)
        await session.commit()
    assert [(e.cursor, e.snapshot["label"]) for e in stamped] == [(1, "x1"), (2, "y1"), (3, "x2")]


def test_a_change_without_an_entity_version_on_the_wire_is_still_read() -> None:
    """Processes that predate versions publish no entity_version; later ones may add fields."""
    change = replace(_change(1), entity_version=4)
    wire = change.to_wire()
    assert Change.from_wire(wire) == change
    older = {key: value for key, value in wire.items() if key != "entity_version"}
    assert Change.from_wire(older).entity_version is None
    assert Change.from_wire({**wire, "added_later": 1}) == change
