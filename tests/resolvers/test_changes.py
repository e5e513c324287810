"""Change events carry the version their entity has after the change."""

from __future__ import annotations

import pytest

from signoff.database import SessionMaker
from signoff.models import ChangeKind, HumanTask, TaskState
from signoff.resolvers.changes import record_task_change
from tests.models.test_versions import task_row


async def test_a_change_takes_the_version_its_flush_gave_the_entity(
    sessionmaker: SessionMaker,
) -> None:
    created = await task_row(sessionmaker)
    async with sessionmaker() as session:
        task = await session.get(HumanTask, created.id)
        assert task is not None
        task.state = TaskState.CANCELLED
        with pytest.raises(AssertionError, match="flush the HumanTask"):
            record_task_change(session, ChangeKind.TASK_EXPIRED, task, None)
        await session.flush()
        event = record_task_change(session, ChangeKind.TASK_EXPIRED, task, None)
        assert event.entity_version == task.version == 2
        await session.rollback()
