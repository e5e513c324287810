"""Queue statistics: how a queue is keeping up (docs/design.md section 5.4)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import timedelta

from sqlmodel import col, func, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import QUEUE_STATS_WINDOW_SECONDS
from signoff.models import HumanTask, Role, TaskState
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.approval.queues import get_queue

OPEN_STATES = [TaskState.OPEN.value, TaskState.CLAIMED.value]


@dataclass(frozen=True)
class QueueStats:
    open_items: int  # tasks waiting (open or claimed)
    oldest_age_seconds: int | None  # the longest-waiting open task's age
    past_sla: int  # open tasks past their due time
    median_decision_seconds: float | None  # created → completed, over the window
    decided_in_window: int
    window_seconds: int


async def queue_stats(*, session: AsyncSession, viewer: Viewer, queue_id: str) -> QueueStats:
    """Open items, the oldest one's age, items past their due time, and the median time
    from task to decision over the last day; for the queue's reviewers and operators."""
    require_role(viewer, Role.REVIEWER, Role.OPERATOR)
    queue = await get_queue(session=session, viewer=viewer, queue_id=queue_id)
    now = clock.now()
    waiting = (col(HumanTask.queue_id) == queue.id, col(HumanTask.state).in_(OPEN_STATES))
    count, oldest, late = (
        await session.exec(
            select(
                func.count(),
                func.min(HumanTask.created_at),
                func.count().filter(col(HumanTask.due_at) <= now),
            ).where(*waiting)
        )
    ).one()
    since = now - timedelta(seconds=QUEUE_STATS_WINDOW_SECONDS)
    decided = (
        await session.exec(
            select(HumanTask.created_at, HumanTask.completed_at).where(
                col(HumanTask.queue_id) == queue.id,
                col(HumanTask.state) == TaskState.COMPLETED.value,
                col(HumanTask.completed_at) > since,
            )
        )
    ).all()
    durations = [(done - made).total_seconds() for made, done in decided if done is not None]
    return QueueStats(
        open_items=int(count),
        oldest_age_seconds=None if oldest is None else int((now - oldest).total_seconds()),
        past_sla=int(late),
        median_decision_seconds=statistics.median(durations) if durations else None,
        decided_in_window=len(durations),
        window_seconds=QUEUE_STATS_WINDOW_SECONDS,
    )
