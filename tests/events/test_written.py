"""What writers hand the sequencer (PostgreSQL): read only for local subscribers, taken
when this process stamps the events, and bounded when it never does."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from signoff.constants import FEED_WRITTEN_KEEP_RELAY_PERIODS
from signoff.database import SessionMaker, create_sessionmaker
from signoff.events import feed
from signoff.events.hub import Change, EventHub, MemoryTransport
from signoff.events.service import EventService
from signoff.events.written import WrittenObjects
from signoff.models import ChangeKind
from signoff.resolvers.core.work import Services, WorkMaker
from tests.conftest import requires_postgres
from tests.helpers import record_event

RELAY_SECONDS = 0.1


def test_the_oldest_entries_go_past_the_limit() -> None:
    written = WrittenObjects(keep_seconds=60, limit=3)
    for i in range(5):
        written.hand_over({f"e{i}": {"task": i}})
    assert len(written) == 3
    assert written.take("e0") is None and written.take("e1") is None
    assert written.take("e4") == {"task": 4}


def test_entries_go_after_keep_seconds_and_a_taken_one_is_gone() -> None:
    written = WrittenObjects(keep_seconds=0.05, limit=100)
    written.hand_over({"old": {"task": 1}, "taken": {"task": 2}})
    assert written.take("taken") == {"task": 2}
    assert written.take("taken") is None
    time.sleep(0.06)
    written.hand_over({"new": {"task": 3}})
    assert len(written) == 1
    assert written.take("old") is None and written.take("new") == {"task": 3}


def _service(sessionmaker: SessionMaker, relay_seconds: float = RELAY_SECONDS) -> EventService:
    """A process's event service, its writers stamping after commit (as on PostgreSQL)."""

    async def load_after(after: int, through: int | None) -> list[Change]:
        async with sessionmaker() as session:
            rows = await feed.events_after(session, after, through=through)
            await session.commit()
        return [Change.from_row(row) for row in rows]

    return EventService(
        EventHub(MemoryTransport(), load_after, buffer=100),
        sessionmaker,
        relay_seconds=relay_seconds,
        retention=timedelta(days=1),
    )


@pytest.fixture
def task_reads(engine: AsyncEngine) -> Iterator[list[str]]:
    """Every statement the engine sends meanwhile that reads tasks."""
    sent: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "human_tasks" in statement:
            sent.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", note)
    yield sent
    event.remove(engine.sync_engine, "before_cursor_execute", note)


@pytest.fixture
async def unstarted(engine: AsyncEngine, clean_database: None) -> AsyncIterator[EventService]:
    """A service whose loop is not running: only what a test calls stamps."""
    service = _service(create_sessionmaker(engine))
    yield service
    await service.hub.stop()


async def _commit_task_event(service: EventService, engine: AsyncEngine) -> str:
    work = WorkMaker(create_sessionmaker(engine), Services(events=service))
    async with work() as unit:
        event_id = record_event(
            unit, kind=ChangeKind.TASK_CREATED, entity_type="task", entity_id=str(uuid.uuid4())
        )
        await unit.commit()
    return event_id


@requires_postgres
async def test_without_local_subscribers_a_writer_reads_nothing_for_its_events(
    unstarted: EventService, engine: AsyncEngine, task_reads: list[str]
) -> None:
    await _commit_task_event(unstarted, engine)
    assert task_reads == []
    subscriber = unstarted.hub.subscribe(lambda change: True)
    await _commit_task_event(unstarted, engine)
    assert len(task_reads) == 1, "with a subscriber, the writer reads its task"
    unstarted.hub.unsubscribe(subscriber)


@requires_postgres
async def test_what_another_process_stamped_is_dropped_after_a_few_relay_periods(
    engine: AsyncEngine, clean_database: None
) -> None:
    """Objects handed over for an event that another process stamps are never taken
    here: they go at this process's first tick after a few relay periods."""
    # A relay period long enough that the first tick, after the other process's
    # sequencing, comes within it on a loaded machine (at 0.1 s it once did not, in CI).
    relay_seconds = 1.0
    unstarted = _service(create_sessionmaker(engine), relay_seconds)
    try:
        event_id = await _commit_task_event(unstarted, engine)
        unstarted.written.hand_over({event_id: {"task": object()}})  # as its writer would
        assert await _service(create_sessionmaker(engine)).sequence() == 1  # the other one
        await unstarted.tick()
        assert len(unstarted.written) == 1, "kept for a few relay periods"
        await asyncio.sleep(FEED_WRITTEN_KEEP_RELAY_PERIODS * relay_seconds)
        await unstarted.tick()
        assert len(unstarted.written) == 0
    finally:
        await unstarted.hub.stop()
