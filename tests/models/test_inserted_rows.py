"""Rows made with ``built`` and inserted with ``UnitOfWork.insert`` (the creation path of
every aggregate): the same row a constructor and an ORM flush would make, in the session
afterwards as if loaded, and changed later like any other row."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from signoff import clock
from signoff.database import SessionMaker
from signoff.models import Actor, HumanTask, Queue, Role, TaskState
from signoff.models.base import built
from signoff.resolvers.core.work import UnitOfWork


def _task_values(queue_id: str, actor_id: str) -> dict[str, Any]:
    now = clock.now()
    return {
        "queue_id": queue_id,
        "kind": "REVIEW",
        "title": "built",
        "context": {"order": "o-1"},
        "due_at": now + timedelta(days=1),
        "created_by_id": actor_id,
        "created_at": now,
        "updated_at": now,
    }


def test_a_built_row_has_what_the_constructor_gives_it() -> None:
    values = _task_values("q-1", "a-1")
    made, constructed = built(HumanTask, **values), HumanTask(**values)
    assert made.model_dump(exclude={"id"}) == constructed.model_dump(exclude={"id"})
    assert made.id != constructed.id  # each gets its own from the id's default factory
    assert made.version == 1 and made.state == TaskState.OPEN and made.priority == 0


def test_a_built_row_refuses_unknown_and_missing_fields() -> None:
    values = _task_values("q-1", "a-1")
    with pytest.raises(TypeError, match="no field 'titel'"):
        built(HumanTask, **values, titel="typo")
    del values["queue_id"]
    with pytest.raises(TypeError, match="needs 'queue_id'"):
        built(HumanTask, **values)


async def _queue_and_actor(sessionmaker: SessionMaker) -> tuple[str, str]:
    async with sessionmaker() as session:
        actor, queue = Actor(name="maker", role=Role.OPERATOR), Queue(slug="built", name="B")
        session.add_all([actor, queue])
        await session.commit()
        return queue.id, actor.id


async def test_an_inserted_row_is_in_the_session_as_loaded(
    sessionmaker: SessionMaker, engine: AsyncEngine
) -> None:
    queue_id, actor_id = await _queue_and_actor(sessionmaker)
    sent: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement.split(None, 1)[0].upper())

    event.listen(engine.sync_engine, "before_cursor_execute", note)
    try:
        async with sessionmaker() as session:
            work = UnitOfWork(session)
            task = built(HumanTask, **_task_values(queue_id, actor_id))
            await work.insert(task)
            assert await session.get(HumanTask, task.id) is task  # no read: the identity map
            assert task not in session.new and task not in session.dirty
            task.title = "renamed"  # changed afterwards like any loaded row
            await work.commit()
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", note)
    # One insert, the rename's update at commit, and no read in between.
    assert [s for s in sent if s in {"INSERT", "UPDATE", "SELECT"}] == ["INSERT", "UPDATE"]
    async with sessionmaker() as session:
        stored = await session.get(HumanTask, task.id)
        assert stored is not None
        assert (stored.title, stored.version, stored.context) == ("renamed", 2, {"order": "o-1"})


async def test_rows_added_before_an_insert_are_flushed_first(sessionmaker: SessionMaker) -> None:
    """A new row may refer to one the caller only added: that one goes in first."""
    async with sessionmaker() as session:
        work = UnitOfWork(session)
        actor, queue = Actor(name="maker", role=Role.OPERATOR), Queue(slug="first", name="F")
        session.add_all([actor, queue])
        task = built(HumanTask, **_task_values(queue.id, actor.id))
        await work.insert(task)
        await work.commit()
    async with sessionmaker() as session:
        assert await session.get(HumanTask, task.id) is not None
