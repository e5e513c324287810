"""Reminders: a queue's offsets send ``task.due_soon`` before a task is due (docs/design.md
section 5.4).

A queue lists percentages of a task's time to its due time (``[50, 90]``: half-way, and
when a tenth is left). Each task keeps when its next reminder is due, so the sweep finds
them by one indexed comparison; sending one is a compare-and-set on that time (row T12),
so two sweeps send it once. An escalation restarts the count in the new queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlmodel import col, select

from signoff.constants import QUEUE_REMINDERS_MAX, SWEEP_BATCH_SIZE
from signoff.errors import ValidationFailed
from signoff.models import HumanTask, Queue, TaskState
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import TASK
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.reach.notifications import notify


def checked_percents(percents: Sequence[int] | None) -> list[int]:
    """A queue's reminder offsets: distinct percentages 1-99, at most five, ascending."""
    values = sorted(set(percents or []))
    if len(values) > QUEUE_REMINDERS_MAX or any(not 1 <= p <= 99 for p in values):
        raise ValidationFailed(
            f"reminderPercents takes at most {QUEUE_REMINDERS_MAX} percentages from 1 to 99.",
            field="reminderPercents",
        )
    return values


def reminder_at(
    percents: Sequence[int], start: datetime, due: datetime, sent: int
) -> datetime | None:
    """When the reminder after the first ``sent`` is due; ``None`` when none is left."""
    if sent >= len(percents):
        return None
    return start + (due - start) * percents[sent] / 100


def schedule(task: HumanTask, queue: Queue, start: datetime) -> None:
    """Start ``task``'s reminders afresh in ``queue`` (a new task, or one escalated)."""
    task.due_from = start
    task.reminders_sent = 0
    task.next_reminder_at = reminder_at(queue.reminder_percents, start, task.due_at, 0)


async def send_due_reminders(work: UnitOfWork, *, limit: int = SWEEP_BATCH_SIZE) -> list[str]:
    """Send every reminder that has come due; returns the ids of the tasks reminded."""
    now = work.now()
    due = select(HumanTask).where(
        col(HumanTask.next_reminder_at) <= now,
        col(HumanTask.state).in_([TaskState.OPEN.value, TaskState.CLAIMED.value]),
    )
    tasks = list(
        (await work.session.exec(due.order_by(col(HumanTask.next_reminder_at)).limit(limit))).all()
    )
    queues: dict[str, Queue] = {}
    reminded = []
    for task in tasks:
        queue = queues.get(task.queue_id) or await work.session.get(Queue, task.queue_id)
        assert queue is not None  # tasks keep their queue
        queues[queue.id] = queue
        if await remind(work, task, queue, now) is not None:
            reminded.append(task.id)
    await work.commit()
    return reminded


async def remind(
    work: UnitOfWork, task: HumanTask, queue: Queue, now: datetime
) -> HumanTask | None:
    """Row T12: one reminder, once (the guard is the due time it was read with)."""
    sent = task.reminders_sent
    start = task.due_from or task.created_at
    percents = queue.reminder_percents
    percent = percents[sent] if sent < len(percents) else None
    reminded = await TASK.move(
        work,
        lifecycles.REMIND,
        task.id,
        actor_id=None,
        guard=col(HumanTask.next_reminder_at) == task.next_reminder_at,
        values={
            "reminders_sent": sent + 1,
            "next_reminder_at": reminder_at(percents, start, task.due_at, sent + 1),
        },
        details={
            "percent": percent,
            "due_at": task.due_at.isoformat(),
            "seconds_left": max(0, int((task.due_at - now).total_seconds())),
        },
    )
    if reminded is not None:
        await notify(work, reminded, "task.due_soon")
    return reminded
