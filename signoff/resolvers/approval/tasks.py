"""Human tasks: creating, claiming (a lease), releasing, completing and listing them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import BindParameter, and_, or_
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.errors import (
    AlreadyDecided,
    Forbidden,
    ResponseInvalid,
    TaskClaimedByOther,
    TaskNotClaimable,
    TaskNotClaimed,
    ValidationFailed,
)
from signoff.jsonvalues import check_schema, require_object, validate_against
from signoff.models import (
    APPROVAL_KIND,
    APPROVAL_RESPONSE_SCHEMA,
    Approval,
    ChangeKind,
    Decision,
    HumanTask,
    Proposal,
    Queue,
    Role,
    TaskState,
)
from signoff.models.task import claim_lapsed, workable_by
from signoff.resolvers.access.eligibility import require_eligible
from signoff.resolvers.access.rules import Viewer, require_reviewer_of, require_role
from signoff.resolvers.approval.approvals import apply_decision
from signoff.resolvers.approval.four_eyes import require_four_eyes
from signoff.resolvers.core import idempotency, lifecycles
from signoff.resolvers.core.lifecycles import TASK
from signoff.resolvers.core.pagination import Equals, Matches, OneOf, Order, Page, Where, paginate
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.reach import reminders
from signoff.resolvers.reach.notifications import notify
from signoff.validation import optional_text, require_range, require_text


@dataclass(frozen=True)
class CompleteResult:
    task: HumanTask
    replayed: bool


async def create_task(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    queue_id: str,
    kind: str,
    title: str,
    context: Any = None,
    response_schema: Any = None,
    priority: int | None = None,
    due_in_seconds: int | None = None,
    idempotency_key: str | None = None,
) -> HumanTask:
    """Put a free-form unit of human work (a review, a question) in a queue; a retry under
    the same key creates nothing."""
    require_role(viewer, Role.AGENT, Role.OPERATOR)
    request: dict[str, Any] = {
        "queue_id": queue_id,
        "kind": kind,
        "title": title,
        "context": context,
        "response_schema": response_schema,
        "priority": priority,
        "due_in_seconds": due_in_seconds,
    }
    task, _ = await idempotency.once(
        work,
        viewer,
        idempotency.Keyed.of("createTask", idempotency_key, request),
        lambda: _create_task(work, viewer, **request),
        idempotency.Kept.row("task_id", lambda task: task.id, _stored_task),
    )
    return task


async def _create_task(
    work: UnitOfWork,
    viewer: Viewer,
    *,
    queue_id: str,
    kind: str,
    title: str,
    context: Any,
    response_schema: Any,
    priority: int | None,
    due_in_seconds: int | None,
) -> HumanTask:
    kind = require_text(kind, "kind", 1, 64).upper()
    if kind == APPROVAL_KIND:
        raise ValidationFailed("APPROVAL tasks are created by proposeAction.", field="kind")
    queue = await require_row(work.session, Queue, queue_id, "No such queue.", field="queueId")
    now = work.now()
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
    reminders.schedule(task, queue, now)
    await TASK.created(
        work,
        task,
        kind=ChangeKind.TASK_CREATED,
        action="task.created",
        actor_id=viewer.id,
        details={"queue_id": queue.id, "kind": kind},
    )
    await notify(work, task, "task.created")
    return task


async def _stored_task(work: UnitOfWork, task_id: str) -> HumanTask:
    return await require_row(work.session, HumanTask, task_id, "No such task.")


async def get_task(*, session: AsyncSession, viewer: Viewer, task_id: str) -> HumanTask:
    task = await require_row(session, HumanTask, task_id, "No such task.")
    if not viewer.sees(queue_id=task.queue_id, owner_id=task.created_by_id):
        raise Forbidden("This task is not in a queue you work.")
    return task


async def claim_task(*, work: UnitOfWork, viewer: Viewer, task_id: str) -> HumanTask:
    """Take a lease on a task; its holder claiming again renews the lease."""
    session = work.session
    task = await get_task(session=session, viewer=viewer, task_id=task_id)
    require_reviewer_of(viewer, task.queue_id)
    if task.kind == APPROVAL_KIND:
        await _require_may_decide(session, viewer, task)
    # Who holds work is who may decide it: an admin decides directly, never holds it.
    await require_eligible(session, viewer.id, task.queue_id)
    queue = await session.get(Queue, task.queue_id)
    assert queue is not None  # tasks reference their queue
    now = work.now()
    # Whole seconds, as every expiry Signoff sets (a proposal's, a deadline's).
    expires = (now + timedelta(seconds=queue.claim_ttl_seconds)).replace(microsecond=0)
    claimed = await TASK.move(
        work,
        lifecycles.CLAIM,
        task.id,
        actor_id=viewer.id,
        guard=workable_by(viewer.id, now),
        values={"assignee_id": viewer.id, "claim_expires_at": expires},
        details={
            "claim_expires_at": expires.isoformat(),
            "lapsed_claim_of": task.assignee_id if claim_lapsed(task, now) else None,
        },
    )
    if claimed is None:
        await TASK.refuse(work, task_id, _not_claimable(viewer))
    await work.commit()
    return claimed


async def _require_may_decide(session: AsyncSession, viewer: Viewer, task: HumanTask) -> None:
    proposal = await session.get(Proposal, task.proposal_id)
    assert proposal is not None  # approval tasks always point at their proposal
    # Claiming is for approving: the proposer, and the author of the current revision
    # (unless the target lets them), may not hold the task.
    await require_four_eyes(session, viewer, proposal, Decision.APPROVED)
    decided = (
        await session.exec(
            select(Approval.id).where(
                Approval.proposal_id == proposal.id,
                Approval.revision == proposal.revision,  # an amendment lets them decide again
                Approval.approver_id == viewer.id,
            )
        )
    ).first()
    if decided is not None:
        raise AlreadyDecided("You have already decided this proposal.")


def _not_claimable(viewer: Viewer) -> Callable[[HumanTask], Exception]:
    """Why the viewer's claim (or completion) of the task, as it now is, was refused."""

    def explain(task: HumanTask) -> Exception:
        if task.state == TaskState.CLAIMED and task.assignee_id != viewer.id:
            expires = task.claim_expires_at
            return TaskClaimedByOther(
                "Another reviewer holds this task.",
                claimExpiresAt=expires.isoformat() if expires else None,
            )
        return TaskNotClaimable(
            f"The task is {task.state} and cannot be claimed.", state=task.state
        )

    return explain


async def release_task(
    *, work: UnitOfWork, viewer: Viewer, task_id: str, reason: str | None = None
) -> HumanTask:
    """Give a claim back; operators and admins may release anyone's claim."""
    task = await get_task(session=work.session, viewer=viewer, task_id=task_id)
    reason = optional_text(reason, "reason", 1, 2000)
    if not viewer.sees_everything:
        require_reviewer_of(viewer, task.queue_id)
    holder = (
        col(HumanTask.assignee_id) == viewer.id
        if not viewer.sees_everything
        else col(HumanTask.assignee_id).is_not(None)
    )
    released = await TASK.move(
        work,
        lifecycles.RELEASE,
        task.id,
        actor_id=viewer.id,
        guard=holder,
        values={"assignee_id": None, "claim_expires_at": None},
        details={"holder": task.assignee_id, "reason": reason},
    )
    if released is None:
        await TASK.refuse(work, task.id, lambda _: TaskNotClaimed())
    await work.commit()
    return released


async def complete_task(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    task_id: str,
    response: Any,
    idempotency_key: str | None = None,
) -> CompleteResult:
    """Complete a task with a response that fits its schema; approval tasks decide."""
    call = idempotency.Keyed.of(
        "completeTask", idempotency_key, {"task_id": task_id, "response": response}
    )

    async def complete() -> HumanTask:
        task = await get_task(session=work.session, viewer=viewer, task_id=task_id)
        require_reviewer_of(viewer, task.queue_id)
        now = work.now()
        _require_completable(task, viewer, now)
        require_object(response, "response")
        # An approval task answers to the schema of today's rule, whatever a task made
        # before it stored: it must name the digest the reviewer saw.
        schema = APPROVAL_RESPONSE_SCHEMA if task.kind == APPROVAL_KIND else task.response_schema
        validate_against(response, schema, ResponseInvalid, "response")
        if task.kind == APPROVAL_KIND:
            return await _complete_approval(work, viewer, task, response)
        return await _complete_free(work, viewer, task, response, now)

    kept = idempotency.Kept.row(
        "task_id", lambda task: task.id, lambda work, row_id: _reload(work.session, row_id)
    )
    done, replayed = await idempotency.once(work, viewer, call, complete, kept)
    return CompleteResult(task=done, replayed=replayed)


def _require_completable(task: HumanTask, viewer: Viewer, now: datetime) -> None:
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


async def _complete_approval(
    work: UnitOfWork, viewer: Viewer, task: HumanTask, response: dict[str, Any]
) -> HumanTask:
    """Completing an approval task is deciding its proposal: the same rule, the same checks,
    the digest the reviewer saw named in the response."""
    proposal = await work.session.get(Proposal, task.proposal_id)
    assert proposal is not None
    result = await apply_decision(
        work,
        viewer,
        proposal,
        Decision(response["decision"]),
        response.get("reason"),
        payload_digest=response["payloadDigest"],
    )
    assert result.task is not None
    return result.task


async def _complete_free(
    work: UnitOfWork, viewer: Viewer, task: HumanTask, response: dict[str, Any], now: datetime
) -> HumanTask:
    done = await TASK.move(
        work,
        lifecycles.COMPLETE,
        task.id,
        actor_id=viewer.id,
        guard=workable_by(viewer.id, now),
        values={
            "response": response,
            "completed_by_id": viewer.id,
            "completed_at": now,
            "assignee_id": None,
            "claim_expires_at": None,
        },
        details={"response": response},
    )
    if done is None:
        await TASK.refuse(work, task.id, _not_claimable(viewer))
    return done


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
    where: list[Where] = []
    if viewer.role is Role.REVIEWER:
        if queue_id is not None and queue_id not in viewer.queue_ids:
            raise Forbidden("You are not a reviewer of this queue.")
        where.append(OneOf(col(HumanTask.queue_id), viewer.queue_ids))
    elif viewer.role is Role.AGENT:
        where.append(Equals(col(HumanTask.created_by_id), viewer.id))
    elif not viewer.sees_everything:
        raise Forbidden("Integrations do not read tasks.")
    if queue_id is not None:
        where.append(Equals(col(HumanTask.queue_id), queue_id))
    if state is not None:
        where.append(Matches(("state", state), functools.partial(_state_is, state), clock.now()))
    return await paginate(session, HumanTask, where, TASK_ORDER, first=first, after=after)


def _state_is(state: TaskState, now: BindParameter[Any]) -> Any:
    """Filter by the state a reader sees, ``now`` the parameter standing for the
    reading's time: a lapsed claim counts as open."""
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
