"""Entity versions: every UPDATE of a proposal, task or incident row bumps its version."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import update
from sqlmodel import col

from signoff import clock
from signoff.database import SessionMaker
from signoff.models import Actor, HumanTask, Incident, Queue, Role, TaskState


def _incident() -> Incident:
    now = clock.now()
    return Incident(
        fingerprint=f"test:{now.timestamp()}",
        kind="test",
        severity="LOW",
        title="a test incident",
        entity_type="proposal",
        entity_id="p-1",
        first_seen_at=now,
        last_seen_at=now,
    )


async def task_row(sessionmaker: SessionMaker) -> HumanTask:
    """A committed task in a queue of its own, made without the resolvers."""
    async with sessionmaker() as session:
        actor = Actor(name="creator", role=Role.OPERATOR)
        queue = Queue(slug="versions", name="Versions")
        session.add_all([actor, queue])
        await session.flush()
        task = HumanTask(
            queue_id=queue.id,
            kind="REVIEW",
            title="versioned",
            due_at=clock.now() + timedelta(days=1),
            created_by_id=actor.id,
        )
        session.add(task)
        await session.commit()
    return task


async def _core_update(session: Any, entity: type[Any], entity_id: str, **values: Any) -> Any:
    """A compare-and-set statement as the resolvers write them."""
    stmt = (
        update(entity)
        .where(col(entity.id) == entity_id)
        .values(**values)
        .returning(entity)
        .execution_options(populate_existing=True)
    )
    return (await session.exec(stmt)).scalars().one()


async def test_version_counts_core_updates_and_orm_flushes(sessionmaker: SessionMaker) -> None:
    created = await task_row(sessionmaker)
    assert created.version == 1
    async with sessionmaker() as session:
        claimed = await _core_update(session, HumanTask, created.id, state=TaskState.CLAIMED.value)
        assert claimed.version == 2  # read back by RETURNING
        claimed.state = TaskState.OPEN
        await session.flush()
        assert claimed.version == 3  # read back on flush, never lazily loaded
        await session.commit()
    async with sessionmaker() as session:
        stored = await session.get(HumanTask, created.id)
        assert stored is not None and stored.version == 3


async def test_an_incident_is_versioned_like_proposals_and_tasks(
    sessionmaker: SessionMaker,
) -> None:
    async with sessionmaker() as session:
        incident = _incident()
        session.add(incident)
        await session.flush()
        assert incident.version == 1
        incident.title = "renamed"
        await session.flush()
        updated = await _core_update(session, Incident, incident.id, severity="HIGH")
        assert (incident.version, updated.version) == (3, 3)
        await session.commit()
