"""Proposing actions, and reading the proposals a viewer may see."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import (
    PROPOSAL_EXPIRY_DEFAULT_SECONDS,
    PROPOSAL_EXPIRY_MAX_SECONDS,
    PROPOSAL_EXPIRY_MIN_SECONDS,
)
from signoff.digest import sha256_digest
from signoff.errors import Forbidden, NotFound, PayloadSchemaInvalid, TargetUnavailable
from signoff.jsonvalues import (
    allows_large_numbers,
    check_tree,
    require_object,
    validate_against,
)
from signoff.models import (
    APPROVAL_KIND,
    APPROVAL_RESPONSE_SCHEMA,
    ApprovalMode,
    ChangeKind,
    HumanTask,
    NotificationChannel,
    Proposal,
    ProposalState,
    Queue,
    Role,
    Target,
)
from signoff.models.base import built
from signoff.models.proposal import format_expiry, payload_digest_of
from signoff.models.records import (
    Along,
    RecordSelect,
    as_records,
    record_columns,
    rows_where,
    select_along,
    table_of,
)
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.approval import policies as approval_policies
from signoff.resolvers.core import idempotency
from signoff.resolvers.core.lifecycles import PROPOSAL, TASK
from signoff.resolvers.core.pagination import Equals, OneOf, Order, Page, Where, paginate
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.reach import reminders
from signoff.resolvers.reach.deadlines import DeadlineOverride, DeadlinePolicy, policy_of
from signoff.resolvers.reach.notifications import RECEIVING, notify
from signoff.validation import require_action_code, require_range, require_text


@dataclass(frozen=True)
class ProposeResult:
    proposal: Proposal
    task: HumanTask | None
    replayed: bool


@dataclass(frozen=True)
class ProposalRequest:
    """What the proposer sent; its digest tells a replay from a changed operation."""

    target_id: str
    action_code: str
    subject: dict[str, Any]
    payload: dict[str, Any]
    preconditions: dict[str, Any]
    operation_key: str
    expires_in_seconds: int
    # The proposer's deadline policy override, as sent (``None``: the target's policy).
    deadline: DeadlineOverride | None = None

    def digest(self) -> str:
        material: dict[str, Any] = {
            "target_id": self.target_id,
            "action_code": self.action_code,
            "subject": self.subject,
            "payload": self.payload,
            "preconditions": self.preconditions,
            "expires_in_seconds": self.expires_in_seconds,
        }
        if self.deadline is not None:  # absent from older requests' digests: keep them equal
            material["deadline"] = self.deadline.describe()
        return sha256_digest(material)


def checked_request(
    *,
    target_id: str,
    action_code: str,
    operation_key: str,
    payload: Any,
    subject: Any,
    preconditions: Any,
    expires_in_seconds: int | None,
    deadline: DeadlineOverride | None = None,
) -> ProposalRequest:
    """A proposal request with every field checked (sizes, lengths, expiry range)."""
    return ProposalRequest(
        target_id=target_id,
        action_code=require_action_code(action_code),
        subject=require_object({} if subject is None else subject, "subject"),
        # Numbers beyond ±2^53 are checked once the target is known: its schema may allow them.
        payload=require_object(payload, "payload", large_numbers=True),
        preconditions=require_object(
            {} if preconditions is None else preconditions, "preconditions"
        ),
        operation_key=operation_key,
        expires_in_seconds=require_range(
            expires_in_seconds,
            "expiresInSeconds",
            PROPOSAL_EXPIRY_MIN_SECONDS,
            PROPOSAL_EXPIRY_MAX_SECONDS,
            PROPOSAL_EXPIRY_DEFAULT_SECONDS,
        ),
        deadline=deadline,
    )


def check_payload(payload: dict[str, Any], target: Target) -> None:
    """The payload against its target: numbers beyond ±2^53 only where the target's input
    schema allows them (``PAYLOAD_SCHEMA_INVALID`` comes after ``VALUE_OUT_OF_RANGE``)."""
    if not allows_large_numbers(target.input_schema):
        check_tree(payload, "payload", large_numbers=False)
    validate_against(payload, target.input_schema, PayloadSchemaInvalid, "payload")


async def propose_action(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    target_id: str,
    action_code: str,
    operation_key: str,
    payload: Any,
    subject: Any = None,
    preconditions: Any = None,
    expires_in_seconds: int | None = None,
    deadline: DeadlineOverride | None = None,
) -> ProposeResult:
    """Propose an action; the same operation key with the same material replays."""
    require_role(viewer, Role.AGENT)
    request = checked_request(
        target_id=target_id,
        action_code=action_code,
        operation_key=require_text(operation_key, "operationKey", 1, 200),
        payload=payload,
        subject=subject,
        preconditions=preconditions,
        expires_in_seconds=expires_in_seconds,
        deadline=deadline,
    )
    call = idempotency.Keyed(
        "proposeAction", request.operation_key, request.digest(), field="operationKey"
    )

    # The target is read with the key's look, in one statement.
    target_read = idempotency.Ahead(target_select(target_id))

    async def propose() -> ProposeResult:
        target, queue, queue_has_channels = target_and_queue(target_read.records)
        if target is None:
            raise NotFound("No such target.", field="targetId")
        if not target.is_active:
            raise TargetUnavailable(f"Target {target.name!r} is retired and takes no proposals.")
        check_payload(request.payload, target)
        approval = approval_policies.match(target, request.payload)
        deadline = (
            policy_of(target) if request.deadline is None else request.deadline.within(target)
        )
        proposal, task = new_proposal(viewer, target, request, approval=approval, deadline=deadline)
        await add_proposal(
            work,
            viewer,
            proposal,
            task,
            queue=queue,
            queue_has_channels=queue_has_channels,
            at_commit=True,
        )
        return ProposeResult(proposal=proposal, task=task, replayed=False)

    done, _ = await idempotency.once(work, viewer, call, propose, PROPOSED, ahead=target_read)
    return done


# Where the target's read puts its queue's columns, beside the target's own.
_QUEUE = "queue__"


def _target_select(dialect: str) -> sa.Select[Any]:
    """The target, its queue's columns and whether that queue has notification channels."""
    targets, queues = table_of(Target), table_of(Queue)
    channels = table_of(NotificationChannel)
    receiving = sa.exists().where(channels.c.queue_id == targets.c.queue_id, RECEIVING)
    return (
        sa.select(
            *record_columns(Target),
            *(column.label(f"{_QUEUE}{column.key}") for column in record_columns(Queue)),
            receiving.label("queue_has_channels"),
        )
        .select_from(targets.outerjoin(queues, queues.c.id == targets.c.queue_id))
        .where(targets.c.id == sa.bindparam("target_id", type_=targets.c.id.type))
    )


def target_select(target_id: str) -> RecordSelect:
    """The read of the target, its queue (where approval tasks go unless a policy says
    otherwise) and whether that queue has notification channels, in one statement: most
    queues have none, and then a new task needs no read of them."""
    return RecordSelect(Target, "proposal-target", _target_select, {"target_id": target_id})


def target_and_queue(found: list[Any]) -> tuple[Target | None, Queue | None, bool]:
    """What ``target_select`` found: the target, its queue and whether that queue has
    notification channels."""
    if not found:
        return None, None, False
    target = found[0]
    values = target.__dict__
    of_queue = {
        key.removeprefix(_QUEUE): values.pop(key) for key in list(values) if key.startswith(_QUEUE)
    }
    queue = None if of_queue["id"] is None else as_records(Queue, [of_queue])[0]
    return target, queue, bool(values.pop("queue_has_channels"))


async def add_proposal(
    work: UnitOfWork,
    viewer: Viewer,
    proposal: Proposal,
    task: HumanTask | None,
    *,
    queue: Queue | None = None,
    queue_has_channels: bool | None = None,
    at_commit: bool = False,
    **details: Any,
) -> None:
    """Insert a new proposal and its approval task, audited and in the feed; a proposal
    that needs no approval is scheduled for delivery after commit. ``queue``: a queue the
    caller has read already, used when it is the task's, with whether it has notification
    channels (``None``: not known). ``at_commit``: the caller reads and changes nothing
    of them in the database before it commits, so they may go in with the commit's rows
    where no notification of the task is written (it refers to the task's row)."""
    policy_rule = {} if proposal.policy_rule is None else {"policy_rule": proposal.policy_rule}
    if task is not None:
        if queue is None or queue.id != task.queue_id:
            queue, queue_has_channels = await work.session.get(Queue, task.queue_id), None
        assert queue is not None  # the target's queue, checked when it was registered
        reminders.schedule(task, queue, task.created_at)
    rows = [proposal, *([] if task is None else [task])]
    if at_commit and (task is None or queue_has_channels is False):
        # With the audit records, change events and key record: one statement for them all.
        work.insert_with_commit(*rows)
    else:
        # The proposal and its task in one round trip, the task after the row it refers to.
        await work.insert(*rows)
    await PROPOSAL.created(
        work,
        proposal,
        kind=ChangeKind.PROPOSAL_PROPOSED,
        action="proposal.proposed",
        actor_id=viewer.id,
        inserted=True,
        details={
            "state": proposal.state,
            "payload_digest": proposal.payload_digest,
            "operation_key": proposal.operation_key,
            **policy_rule,
            **details,
        },
    )
    if policy_rule and proposal.state in (ProposalState.QUEUED, ProposalState.APPROVED):
        # Let through by the policy, not by a person: the audit names the rule, no actor.
        record(
            work,
            Happening(
                entity_type="proposal",
                entity_id=proposal.id,
                actor_id=None,
                action="proposal.auto_approved",
                details={"payload_digest": proposal.payload_digest, **policy_rule},
            ),
        )
    if task is not None:
        await TASK.created(
            work,
            task,
            kind=ChangeKind.TASK_CREATED,
            action="task.created",
            actor_id=viewer.id,
            details={"queue_id": task.queue_id, "kind": task.kind},
            inserted=True,
        )
        await notify(work, task, "task.created", any_channels=queue_has_channels)


# A keyed proposal answers with the proposal the key made, and its approval task.
PROPOSED = idempotency.Kept.row(
    "proposal_id",
    lambda done: done.proposal.id,
    lambda work, row_id: load_result(work.session, row_id),
)


async def load_result(session: AsyncSession, proposal_id: str) -> ProposeResult:
    """A stored proposal and its approval task, answered as a replay."""
    proposal = await require_row(session, Proposal, proposal_id, "No such proposal.", refresh=True)
    task = (
        await session.exec(select(HumanTask).where(HumanTask.proposal_id == proposal.id))
    ).first()
    return ProposeResult(proposal=proposal, task=task, replayed=True)


def _first_state(human: bool, target: Target) -> ProposalState:
    """Waiting for reviewers, or let through: queued for delivery, or approved for its
    agent to execute (docs/design.md section 4.21)."""
    if human:
        return ProposalState.APPROVAL_REQUIRED
    return ProposalState.APPROVED if target.agent_executes else ProposalState.QUEUED


def new_proposal(
    viewer: Viewer,
    target: Target,
    request: ProposalRequest,
    *,
    human: bool | None = None,
    compensates_proposal_id: str | None = None,
    approval: approval_policies.PolicyMatch | None = None,
    deadline: DeadlinePolicy | None = None,
) -> tuple[Proposal, HumanTask | None]:
    """The proposal and, when it needs human approval, its approval task (not yet added).
    ``approval``, when the target has an approval policy, decides the approvals and the
    queue; the proposal keeps ``deadline`` (by default its target's) for its deadline."""
    now = clock.now()
    deadline = deadline or policy_of(target)
    expires_at = (now + timedelta(seconds=request.expires_in_seconds)).replace(microsecond=0)
    required, queue_id = target.required_approvals, target.queue_id
    if approval is not None:
        human, required, queue_id = approval.approvals > 0, approval.approvals, approval.queue_id
    elif human is None:
        human = target.approval_mode == ApprovalMode.HUMAN
    proposal = built(
        Proposal,
        target_id=target.id,
        queue_id=queue_id if human else None,
        proposed_by_id=viewer.id,
        action_code=request.action_code,
        subject=request.subject,
        payload=request.payload,
        preconditions=request.preconditions,
        payload_digest="",
        request_digest=request.digest(),
        operation_key=request.operation_key,
        state=_first_state(human, target),
        next_attempt_at=None if human or target.agent_executes else now,
        agent_executes=target.agent_executes,
        required_approvals=required if human else 0,
        policy_rule=None if approval is None else approval.recorded(),
        expires_at=expires_at,
        decided_at=None if human else now,
        deadline_action=deadline.action,
        deadline_reason=deadline.reason,
        escalation_chain=deadline.escalation_chain,
        compensates_proposal_id=compensates_proposal_id,
        created_at=now,
        updated_at=now,
    )
    proposal.payload_digest = payload_digest_of(proposal)
    if not human:
        return proposal, None
    assert queue_id is not None  # registerTarget requires a queue for human approvals
    task = built(
        HumanTask,
        queue_id=queue_id,
        kind=APPROVAL_KIND,
        title=f"Approve {request.action_code} on {target.name}",
        context={
            "proposalId": proposal.id,
            "target": {"id": target.id, "name": target.name, "url": target.url},
            "actionCode": proposal.action_code,
            "subject": proposal.subject,
            "payload": proposal.payload,
            "preconditions": proposal.preconditions,
            "payloadDigest": proposal.payload_digest,
            "requiredApprovals": proposal.required_approvals,
            "expiresAt": format_expiry(expires_at),
        },
        response_schema=APPROVAL_RESPONSE_SCHEMA,
        due_at=expires_at,
        proposal_id=proposal.id,
        created_by_id=viewer.id,
        created_at=now,
        updated_at=now,
    )
    return proposal, task


async def get_proposal(*, session: AsyncSession, viewer: Viewer, proposal_id: str) -> Proposal:
    proposal = await require_row(session, Proposal, proposal_id, "No such proposal.")
    return _seen(viewer, proposal)


async def read_proposal(*, session: AsyncSession, viewer: Viewer, proposal_id: str) -> Proposal:
    """``get_proposal`` for a read that changes nothing: the proposal as a record
    (``signoff.models.records``), read without the ORM."""
    return proposal_seen(viewer, await rows_where(session, Proposal, "id", [proposal_id]))


async def read_proposal_along(
    *, session: AsyncSession, viewer: Viewer, proposal_id: str, along: Sequence[Along]
) -> tuple[Proposal, list[list[Any]] | None]:
    """``read_proposal``, with the reads ``along`` it in its round trip where the
    connection allows (``select_along``; ``None`` where they were not read)."""
    found = await select_along(session, proposal_by_id(proposal_id), along)
    if found is None:
        return await read_proposal(session=session, viewer=viewer, proposal_id=proposal_id), None
    rows, relations = found
    return proposal_seen(viewer, rows), relations


def proposal_seen(viewer: Viewer, found: list[Proposal]) -> Proposal:
    """The proposal a read by id ``found``, if the viewer may see it."""
    if not found:
        raise NotFound("No such proposal.")
    return _seen(viewer, found[0])


def proposal_by_id(proposal_id: str) -> RecordSelect:
    """A read of a proposal by id as a record (``read_proposal``'s), to go with others."""
    return RecordSelect(Proposal, "proposal-by-id", _proposal_by_id, {"id": proposal_id})


def _proposal_by_id(dialect: str) -> sa.Select[Any]:
    proposals = table_of(Proposal)
    return sa.select(*record_columns(Proposal)).where(
        proposals.c.id == sa.bindparam("id", type_=proposals.c.id.type)
    )


def _seen(viewer: Viewer, proposal: Proposal) -> Proposal:
    if not viewer.sees(queue_id=proposal.queue_id, owner_id=proposal.proposed_by_id):
        raise Forbidden("This proposal is not in a queue you review.")
    return proposal


PROPOSAL_ORDER = (
    Order(col(Proposal.created_at), descending=True),
    Order(col(Proposal.id), descending=True),
)


async def list_proposals(
    *,
    session: AsyncSession,
    viewer: Viewer,
    state: ProposalState | None = None,
    queue_id: str | None = None,
    first: int | None = None,
    after: str | None = None,
    along: Sequence[Along] = (),
) -> Page[Proposal]:
    """Newest first, limited to what the viewer may see; the reads ``along`` the page
    (``paginate``) see its proposals only."""
    require_role(viewer, Role.AGENT, Role.REVIEWER, Role.OPERATOR)
    where: list[Where] = []
    if viewer.role is Role.AGENT:
        where.append(Equals(col(Proposal.proposed_by_id), viewer.id))
    elif viewer.role is Role.REVIEWER:
        if queue_id is not None and queue_id not in viewer.queue_ids:
            raise Forbidden("You are not a reviewer of this queue.")
        where.append(OneOf(col(Proposal.queue_id), viewer.queue_ids))
    if queue_id is not None:
        where.append(Equals(col(Proposal.queue_id), queue_id))
    if state is not None:
        where.append(Equals(col(Proposal.state), state))
    return await paginate(
        session, Proposal, where, PROPOSAL_ORDER, first=first, after=after, along=along
    )
