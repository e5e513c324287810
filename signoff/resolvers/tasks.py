"""Human tasks: creating, claiming (a lease), releasing, completing and listing them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.database import commit, rollback
from signoff.errors import (
    AlreadyDecided,
    Forbidden,
    NotFound,
    ResponseInvalid,
    SelfApprovalForbidden,
    TaskClaimedByOther,
    TaskNotClaimable,
    TaskNotClaimed,
    ValidationFailed,
)
from signoff.jsonvalues import check_schema, require_object, validate_against
from signoff.models import (
    APPROVAL_KIND,
    Approval,
    ChangeKind,
    Decision,
    HumanTask,
    Proposal,
    Queue,
    Role,
    TaskState,
)
from signoff.models.task import claim_lapsed
from signoff.resolvers import audit, idempotency
from signoff.resolvers.access import Viewer, require_reviewer_of, require_role
from signoff.resolvers.approvals import apply_decision
from signoff.resolvers.changes import record_task_change
from signoff.resolvers.pagination import Order, Page, paginate
from signoff.validation import optional_text, require_range, require_text


@dataclass(frozen=True)
class CompleteResult:
    task: HumanTask
    replayed: bool


async def create_task(
    *,
    session: AsyncSession,
    viewer: Viewer,
    queue_id: str,
    kind: str,
    title: str,
    context: Any = None,
    response_schema: Any = None,
    priority: int | None = None,
    due_in_seconds: int | None = None,
) -> HumanTask:
    """Put a free-form unit of human work (a review, a question) in a queue."""
    require_role(viewer, Role.AGENT, Role.OPERATOR)
    kind = require_text(kind, "kind", 1, 64).upper()
    if kind == APPROVAL_KIND:
        raise ValidationFailed("APPROVAL tasks are created by proposeAction.", field="kind")
    queue = await session.get(Queue, queue_id)
    if queue is None:
        raise NotFound("No such queue.", field="queueId")
    now = clock.now()
    due = require_range(due_in_seconds, "dueInSeconds", 60, 31 * 86_400, queue.default_due_seconds)
    task = HumanTask(
        queue_id=queue.id,
        kind=kind,
        title=require_text(title, "title", 1, 500),
        context=require_object({} if context is None else context, "context"),
        response_schema=check_schema(
            {} if response_schema is None else response_schema, "responseSchema"
        ),
        priority=require_range(priority, "priority", -1000, 1000, 0),
        due_at=now + timedelta(seconds=due),
        created_by_id=viewer.id,
        created_at=now,
        updated_at=now,
    )
    session.add(task)
    audit.record(
        session,
        actor_id=viewer.id,
        action="task.created",
        target_type="task",
        target_id=task.id,
        queue_id=queue.id,
        kind=kind,
    )
    await _record_change(session, ChangeKind.TASK_CREATED, task, viewer)
    await commit(session)
    return task


async def get_task(*, session: AsyncSession, viewer: Viewer, task_id: str) -> HumanTask:
    task = await session.get(HumanTask, task_id)
    if task is None:
        raise NotFound("No such task.")
    if not _can_see(viewer, task):
        raise Forbidden("This task is not in a queue you work.")
    return task


def _can_see(viewer: Viewer, task: HumanTask) -> bool:
    if viewer.sees_everything:
        return True
    if viewer.role is Role.REVIEWER:
        return task.queue_id in viewer.queue_ids
    return viewer.role is Role.AGENT and task.created_by_id == viewer.id


async def claim_task(*, session: AsyncSession, viewer: Viewer, task_id: str) -> HumanTask:
    """Take a lease on a task; its holder claiming again renews the lease."""
    task = await get_task(session=session, viewer=viewer, task_id=task_id)
    require_reviewer_of(viewer, task.queue_id)
    if task.kind == APPROVAL_KIND:
        await _require_may_decide(session, viewer, task)
    queue = await session.get(Queue, task.queue_id)
    assert queue is not None  # tasks reference their queue
    now = clock.now()
    previous = task.assignee_id if claim_lapsed(task, now) else None
    claimed = await _transition(
        session,
        task.id,
        _workable_by(viewer, now),
        state=TaskState.CLAIMED.value,
        assignee_id=viewer.id,
        claim_expires_at=now + timedelta(seconds=queue.claim_ttl_seconds),
        updated_at=now,
    )
    if claimed is None:
        await rollback(session)
        await _raise_not_claimable(session, viewer, task_id)
    assert claimed is not None
    audit.record(
        session,
        actor_id=viewer.id,
        action="task.claimed",
        target_type="task",
        target_id=task.id,
        claim_expires_at=claimed.claim_expires_at.isoformat() if claimed.claim_expires_at else None,
        lapsed_claim_of=previous,
    )
    await _record_change(session, ChangeKind.TASK_CLAIMED, claimed, viewer)
    await commit(session)
    return claimed


async def _require_may_decide(session: AsyncSession, viewer: Viewer, task: HumanTask) -> None:
    proposal = await session.get(Proposal, task.proposal_id)
    assert proposal is not None  # approval tasks always point at their proposal
    if proposal.proposed_by_id == viewer.id:
        raise SelfApprovalForbidden("You proposed this action; another reviewer must decide it.")
    decided = (
        await session.exec(
            select(Approval.id).where(
                Approval.proposal_id == proposal.id, Approval.approver_id == viewer.id
            )
        )
    ).first()
    if decided is not None:
        raise AlreadyDecided("You have already decided this proposal.")


async def _raise_not_claimable(session: AsyncSession, viewer: Viewer, task_id: str) -> None:
    task = await session.get(HumanTask, task_id)
    assert task is not None
    if task.state == TaskState.CLAIMED and task.assignee_id != viewer.id:
        raise TaskClaimedByOther(
            "Another reviewer holds this task.",
            claimExpiresAt=task.claim_expires_at.isoformat() if task.claim_expires_at else None,
        )
    raise TaskNotClaimable(f"The task is {task.state} and cannot be claimed.", state=task.state)


async def release_task(
    *, session: AsyncSession, viewer: Viewer, task_id: str, reason: str | None = None
) -> HumanTask:
    """Give a claim back; operators and admins may release anyone's claim."""
    task = await get_task(session=session, viewer=viewer, task_id=task_id)
    reason = optional_text(reason, "reason", 1, 2000)
    now = clock.now()
    if not viewer.sees_everything:
        require_reviewer_of(viewer, task.queue_id)
    holder = (
        col(HumanTask.assignee_id) == viewer.id
        if not viewer.sees_everything
        else col(HumanTask.assignee_id).is_not(None)
    )
    released = await _transition(
        session,
        task.id,
        and_(col(HumanTask.state) == TaskState.CLAIMED.value, holder),
        state=TaskState.OPEN.value,
        assignee_id=None,
        claim_expires_at=None,
        updated_at=now,
    )
    if released is None:
        await rollback(session)
        raise TaskNotClaimed()
    audit.record(
        session,
        actor_id=viewer.id,
        action="task.released",
        target_type="task",
        target_id=task.id,
        holder=task.assignee_id,
        reason=reason,
    )
    await _record_change(session, ChangeKind.TASK_RELEASED, released, viewer)
    await commit(session)
    return released


async def complete_task(
    *,
    session: AsyncSession,
    viewer: Viewer,
    task_id: str,
    response: Any,
    idempotency_key: str | None = None,
) -> CompleteResult:
    """Complete a task with a response that fits its schema; approval tasks decide."""
    request = {"task_id": task_id, "response": response}
    stored = await idempotency.find_replay(
        session, viewer, "completeTask", idempotency_key, request
    )
    if stored is not None:
        return CompleteResult(task=await _reload(session, stored["task_id"]), replayed=True)
    task = await get_task(session=session, viewer=viewer, task_id=task_id)
    require_reviewer_of(viewer, task.queue_id)
    now = clock.now()
    if task.state not in (TaskState.OPEN, TaskState.CLAIMED):
        raise TaskNotClaimable(
            f"The task is {task.state} and cannot be completed.", state=task.state
        )
    if (
        task.state == TaskState.CLAIMED
        and task.assignee_id != viewer.id
        and not claim_lapsed(task, now)
    ):
        raise TaskClaimedByOther("Another reviewer holds this task; only they can complete it.")
    require_object(response, "response")
    validate_against(response, task.response_schema, ResponseInvalid, "response")
    if task.kind == APPROVAL_KIND:
        done = await _complete_approval(session, viewer, task, response)
    else:
        done = await _complete_free(session, viewer, task, response, now)
    idempotency.remember(
        session, viewer, "completeTask", idempotency_key, request, {"task_id": done.id}
    )
    try:
        await session.flush()
    except IntegrityError:
        await rollback(session)
        return CompleteResult(task=await _reload(session, task_id), replayed=True)
    await commit(session)
    return CompleteResult(task=done, replayed=False)


async def _complete_approval(
    session: AsyncSession, viewer: Viewer, task: HumanTask, response: dict[str, Any]
) -> HumanTask:
    """Completing an approval task is deciding its proposal: the same rule, the same checks."""
    proposal = await session.get(Proposal, task.proposal_id)
    assert proposal is not None
    result = await apply_decision(
        session, viewer, proposal, Decision(response["decision"]), response.get("reason")
    )
    assert result.task is not None
    return result.task


async def _complete_free(
    session: AsyncSession, viewer: Viewer, task: HumanTask, response: dict[str, Any], now: datetime
) -> HumanTask:
    done = await _transition(
        session,
        task.id,
        _workable_by(viewer, now),
        state=TaskState.COMPLETED.value,
        response=response,
        completed_by_id=viewer.id,
        completed_at=now,
        assignee_id=None,
        claim_expires_at=None,
        updated_at=now,
    )
    if done is None:
        await rollback(session)
        await _raise_not_claimable(session, viewer, task.id)
    assert done is not None
    audit.record(
        session,
        actor_id=viewer.id,
        action="task.completed",
        target_type="task",
        target_id=task.id,
        response=response,
    )
    await _record_change(session, ChangeKind.TASK_COMPLETED, done, viewer)
    return done


def _workable_by(viewer: Viewer, now: datetime) -> Any:
    """Open, held by ``viewer``, or held by someone whose lease has lapsed."""
    return or_(
        col(HumanTask.state) == TaskState.OPEN.value,
        and_(
            col(HumanTask.state) == TaskState.CLAIMED.value,
            or_(col(HumanTask.assignee_id) == viewer.id, col(HumanTask.claim_expires_at) <= now),
        ),
    )


async def _record_change(
    session: AsyncSession, kind: ChangeKind, task: HumanTask, viewer: Viewer
) -> None:
    """Approval tasks carry their proposer, so the agent that proposed may follow them."""
    proposal = None if task.proposal_id is None else await session.get(Proposal, task.proposal_id)
    record_task_change(
        session,
        kind,
        task,
        viewer.id,
        proposed_by_id=None if proposal is None else proposal.proposed_by_id,
    )


async def _transition(
    session: AsyncSession, task_id: str, condition: Any, **values: Any
) -> HumanTask | None:
    """Compare-and-set: apply ``values`` only while ``condition`` holds; the winner gets the row."""
    stmt = (
        update(HumanTask)
        .where(col(HumanTask.id) == task_id, condition)
        .values(**values)
        .returning(HumanTask)
        .execution_options(populate_existing=True)
    )
    return (await session.exec(stmt)).scalars().first()


async def _reload(session: AsyncSession, task_id: str) -> HumanTask:
    task = await session.get(HumanTask, task_id)
    assert task is not None
    return task


TASK_ORDER = (
    Order(col(HumanTask.priority), descending=True),
    Order(col(HumanTask.due_at)),
    Order(col(HumanTask.created_at)),
    Order(col(HumanTask.id)),
)


async def list_tasks(
    *,
    session: AsyncSession,
    viewer: Viewer,
    queue_id: str | None = None,
    state: TaskState | None = None,
    first: int | None = None,
    after: str | None = None,
) -> Page[HumanTask]:
    """The queue order: highest priority, then soonest due, then oldest."""
    stmt = select(HumanTask)
    if viewer.role is Role.REVIEWER:
        if queue_id is not None and queue_id not in viewer.queue_ids:
            raise Forbidden("You are not a reviewer of this queue.")
        stmt = stmt.where(col(HumanTask.queue_id).in_(viewer.queue_ids))
    elif viewer.role is Role.AGENT:
        stmt = stmt.where(HumanTask.created_by_id == viewer.id)
    elif not viewer.sees_everything:
        raise Forbidden("Integrations do not read tasks.")
    if queue_id is not None:
        stmt = stmt.where(HumanTask.queue_id == queue_id)
    if state is not None:
        stmt = stmt.where(_state_is(state, clock.now()))
    return await paginate(session, stmt, TASK_ORDER, first=first, after=after)


def _state_is(state: TaskState, now: datetime) -> Any:
    """Filter by the state a reader sees: a lapsed claim counts as open."""
    lapsed = and_(
        col(HumanTask.state) == TaskState.CLAIMED.value, col(HumanTask.claim_expires_at) <= now
    )
    if state is TaskState.OPEN:
        return or_(col(HumanTask.state) == TaskState.OPEN.value, lapsed)
    if state is TaskState.CLAIMED:
        return and_(
            col(HumanTask.state) == TaskState.CLAIMED.value, col(HumanTask.claim_expires_at) > now
        )
    return col(HumanTask.state) == state.value
