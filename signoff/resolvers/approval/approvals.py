"""Deciding a proposal: the one rule behind ``decideProposal`` and completing an approval task.

Four eyes and quorum (docs/design.md section 4.4). The proposal changes state exactly once
whatever the concurrency: each reviewer's approval row is unique, and the count and state
move in one conditional ``UPDATE … RETURNING`` that late callers fail to match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import case
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import REASON_MAX_CHARS, REASON_MIN_CHARS
from signoff.errors import (
    AlreadyDecided,
    NotAwaitingApproval,
    PayloadDigestMismatch,
    TaskClaimedByOther,
)
from signoff.models import (
    Actor,
    Approval,
    Decision,
    HumanTask,
    Proposal,
    ProposalState,
    TaskState,
)
from signoff.models.records import record_columns, select_all, select_records, table_of
from signoff.models.task import claim_lapsed, workable_by
from signoff.resolvers.access.eligibility import (
    ActorStanding,
    check_deciding_now,
    decision_standings,
    standings,
    standings_of,
)
from signoff.resolvers.access.rules import Viewer, require_reviewer_of
from signoff.resolvers.approval.four_eyes import require_four_eyes
from signoff.resolvers.approval.proposals import proposal_by_id, proposal_seen
from signoff.resolvers.core import idempotency, lifecycles
from signoff.resolvers.core.lifecycles import PROPOSAL, TASK
from signoff.resolvers.core.transitions import Happening, Planned, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.validation import optional_text


@dataclass(frozen=True)
class DecideResult:
    proposal: Proposal
    approval: Approval
    task: HumanTask | None
    replayed: bool
    # The approver as the decision read it (``None`` where it was not read: a replay).
    approver: Actor | None = None


async def decide_proposal(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    proposal_id: str,
    decision: Decision,
    payload_digest: str,
    reason: str | None = None,
    idempotency_key: str | None = None,
) -> DecideResult:
    """Record one reviewer's decision; the last approval of a quorum queues the proposal."""
    call = idempotency.Keyed.of(
        "decideProposal",
        idempotency_key,
        {
            "proposal_id": proposal_id,
            "decision": decision.value,
            "payload_digest": payload_digest,
            "reason": reason,
        },
    )

    async def decide() -> DecideResult:
        return await decide_named(work, viewer, proposal_id, payload_digest, decision, reason)

    result, _ = await idempotency.once(work, viewer, call, decide, DECIDED)
    return result


async def decide_named(
    work: UnitOfWork,
    viewer: Viewer,
    proposal_id: str,
    payload_digest: str,
    decision: Decision,
    reason: str | None,
    *,
    bulk: dict[str, Any] | None = None,
) -> DecideResult:
    """Decide the proposal ``payload_digest`` names, if it still has that digest."""
    # A record: the decision only reads it, and its move returns the proposal as it left it.
    # The decider and the proposer as committed now, in the same round trip.
    found, deciders = await select_all(
        work.session, [proposal_by_id(proposal_id), decision_standings(viewer.id, proposal_id)]
    )
    proposal = proposal_seen(viewer, found)
    standing = standings_of(deciders, [viewer.id, proposal.proposed_by_id])
    return await apply_decision(
        work,
        viewer,
        proposal,
        decision,
        reason,
        payload_digest=payload_digest,
        bulk=bulk,
        standing=standing,
    )


def require_digest(proposal: Proposal, payload_digest: str) -> None:
    if proposal.payload_digest != payload_digest:
        raise PayloadDigestMismatch(
            "payloadDigest does not match the proposal; reload it and review what changed.",
            expected=proposal.payload_digest,
        )


@dataclass(frozen=True)
class Decidable:
    """What a decision the viewer may make rests on: the approval task, and the person
    the viewer is."""

    task: HumanTask | None
    person: str


async def check_decidable(
    session: AsyncSession,
    viewer: Viewer,
    proposal: Proposal,
    decision: Decision,
    now: datetime,
    *,
    links: Mapping[str, str | None] | None = None,
) -> Decidable:
    """Refuse a decision this viewer may not make on the proposal now. Deciding and bulk
    previews share it. ``links``: actors' ``person`` columns the caller already read in
    this transaction."""
    require_reviewer_of(viewer, proposal.queue_id)
    require_awaiting(proposal, now)
    person = await require_four_eyes(session, viewer, proposal, decision, links=links)
    task = await approval_task(session, proposal.id)
    if task is not None and held_by_other(task, viewer, now):
        raise TaskClaimedByOther("Another reviewer has claimed this approval task.")
    return Decidable(task=task, person=person)


async def apply_decision(
    work: UnitOfWork,
    viewer: Viewer,
    proposal: Proposal,
    decision: Decision,
    reason: str | None,
    *,
    payload_digest: str,
    bulk: dict[str, Any] | None = None,
    standing: dict[str, ActorStanding] | None = None,
) -> DecideResult:
    """Check and record a decision of the digest the reviewer saw (``payload_digest``:
    every path that decides names one); the caller commits. The proposal and its task
    each move by compare-and-set: a decision never overwrites a claim taken meanwhile,
    and an approval counts only while the proposal still has the digest it names (an
    amendment voids it). ``bulk``: the bulk action it was made in, for the audit;
    ``standing``: the decider's and proposer's ``standings``, if the caller read them."""
    now = work.now()
    session = work.session
    require_digest(proposal, payload_digest)
    # The decider as committed now and the proposer, in one read for both checks.
    found = standing
    if found is None:
        found = await standings(session, [viewer.id, proposal.proposed_by_id], proposal.queue_id)
    links = {actor_id: st.actor.person for actor_id, st in found.items() if st.actor is not None}
    decidable = await check_decidable(session, viewer, proposal, decision, now, links=links)
    check_deciding_now(viewer, proposal.queue_id, found[viewer.id])
    task = decidable.task
    reason = optional_text(reason, "reason", REASON_MIN_CHARS, REASON_MAX_CHARS)
    approval = Approval(
        proposal_id=proposal.id,
        approver_id=viewer.id,
        person=decidable.person,
        decision=decision,
        payload_digest=payload_digest,
        revision=proposal.revision,
        reason=reason,
        created_at=now,
    )
    # The unique (proposal, revision, reviewer) and (proposal, revision, person) rows are
    # the check that a reviewer, and a person, decides each revision once: a look
    # beforehand would race. The approval goes in just before the move, in its round trip.
    _audit_approval(work, viewer, approval, bulk)
    try:
        updated = await _advance(work, viewer, proposal.id, approval, now)
    except IntegrityError:
        await work.rollback()
        raise AlreadyDecided("You have already decided this proposal.") from None
    if updated is None:
        await PROPOSAL.refuse(work, proposal.id, _decided_meanwhile(approval.payload_digest))
    decided = updated.state != ProposalState.APPROVAL_REQUIRED
    if task is not None:
        task = await _settle_task(work, viewer, task, approval, decided, now)
    return DecideResult(
        proposal=updated,
        approval=approval,
        task=task,
        replayed=False,
        approver=found[viewer.id].actor,
    )


def _decided_meanwhile(decided_digest: str) -> Callable[[Proposal], Exception]:
    """Why a decision on ``decided_digest`` did not count, given the proposal as it now is."""

    def explain(current: Proposal) -> Exception:
        if current.payload_digest != decided_digest:
            return PayloadDigestMismatch(
                "The proposal changed just now (amended, or escalated with a new deadline), "
                "so its digest is new; reload it and review it again.",
                expected=current.payload_digest,
            )
        return NotAwaitingApproval("The proposal was decided by someone else just now.")

    return explain


def require_awaiting(proposal: Proposal, now: datetime) -> None:
    if proposal.state != ProposalState.APPROVAL_REQUIRED:
        raise NotAwaitingApproval(
            f"The proposal is {proposal.state}, not waiting for approval.", state=proposal.state
        )
    if proposal.expires_at <= now:
        raise NotAwaitingApproval("The proposal's approval deadline has passed.", state="EXPIRED")


def held_by_other(task: HumanTask, viewer: Viewer, now: datetime) -> bool:
    return (
        task.state == TaskState.CLAIMED
        and task.assignee_id != viewer.id
        and not claim_lapsed(task, now)
    )


async def approval_task(session: AsyncSession, proposal_id: str) -> HumanTask | None:
    """The proposal's approval task, as a record (it is only read; a move returns it as
    it left it)."""
    found = await select_records(
        session, HumanTask, "approval_task", _approval_task_select, {"id": proposal_id}
    )
    return found[0] if found else None


def _approval_task_select(dialect: str) -> sa.Select[Any]:
    return sa.select(*record_columns(HumanTask)).where(
        col(HumanTask.proposal_id) == sa.bindparam("id", type_=sa.String)
    )


async def require_undecided(session: AsyncSession, proposal: Proposal, actor_id: str) -> None:
    """Refuse when the actor has decided the proposal's current revision: for previews,
    since a decision itself relies on the unique approval row (one query fewer)."""
    stmt = select(Approval.id).where(
        Approval.proposal_id == proposal.id,
        Approval.revision == proposal.revision,
        Approval.approver_id == actor_id,
    )
    if (await session.exec(stmt)).first() is not None:
        raise AlreadyDecided("You have already decided this proposal.")


def _audit_approval(
    work: UnitOfWork, viewer: Viewer, approval: Approval, bulk: dict[str, Any] | None
) -> None:
    record(
        work,
        Happening(
            entity_type="proposal",
            entity_id=approval.proposal_id,
            actor_id=viewer.id,
            action=f"approval.{approval.decision.lower()}",
            details={
                "approval_id": approval.id,
                "payload_digest": approval.payload_digest,
                "revision": approval.revision,
                "reason": approval.reason,
                **({} if bulk is None else {"bulk": bulk}),
            },
        ),
    )


def queue_if_reached(
    reached: sa.ColumnElement[bool], now: datetime | sa.ColumnElement[Any]
) -> dict[str, Any]:
    """The values that queue a proposal for delivery, in the statement that counts toward
    its quorum, where ``reached`` holds: the check and the move are one compare-and-set.
    A proposal its agent executes is left APPROVED instead, with no attempt due."""
    delivered = sa.and_(reached, col(Proposal.agent_executes).is_(False))
    return {
        "state": case(
            (delivered, ProposalState.QUEUED.value),
            (reached, ProposalState.APPROVED.value),
            else_=col(Proposal.state),
        ),
        "decided_at": case((reached, now), else_=None),
        "next_attempt_at": case((delivered, now), else_=None),
    }


# A decision's moves, written once (``Planned``): their values travel as parameters.
_NOW = sa.bindparam("now", type_=table_of(Proposal).c.decided_at.type)
_DIGEST = sa.bindparam("digest", type_=table_of(Proposal).c.payload_digest.type)
_DECIDER = sa.bindparam("decider", type_=table_of(HumanTask).c.completed_by_id.type)
_RESPONSE = sa.bindparam("response", type_=table_of(HumanTask).c.response.type)


def _counted() -> tuple[Any, dict[str, Any]]:
    """The digest the decision names, before the deadline: an amendment or an escalation
    (a new deadline, so a new digest) that committed after the decision read the
    proposal wins, and the stale decision is refused."""
    return (
        sa.and_(col(Proposal.expires_at) > _NOW, col(Proposal.payload_digest) == _DIGEST),
        {},
    )


def _approve() -> tuple[Any, dict[str, Any]]:
    guard, _ = _counted()
    count = col(Proposal.approval_count)
    # With an amendment the agent has yet to accept, the quorum waits for it.
    reached = sa.and_(
        count + 1 >= col(Proposal.required_approvals),
        col(Proposal.awaiting_proposer).is_(False),
    )
    return guard, {"approval_count": count + 1, **queue_if_reached(reached, _NOW)}


def _reject() -> tuple[Any, dict[str, Any]]:
    guard, _ = _counted()
    return guard, {"decided_at": _NOW}


def _settled(decided: bool) -> Planned:
    """A final decision completes the task; a partial quorum reopens it for the next
    reviewer. A claim another reviewer took meanwhile wins."""

    def build() -> tuple[Any, dict[str, Any]]:
        values: dict[str, Any] = {"assignee_id": None, "claim_expires_at": None}
        if decided:
            values |= {"response": _RESPONSE, "completed_by_id": _DECIDER, "completed_at": _NOW}
        return workable_by(_DECIDER, _NOW), values

    return Planned(("settle", decided), build)


_APPROVE, _REJECT = Planned("approve", _approve), Planned("reject", _reject)
_COMPLETE, _REOPEN = _settled(True), _settled(False)


async def _advance(
    work: UnitOfWork, viewer: Viewer, proposal_id: str, approval: Approval, now: datetime
) -> Proposal | None:
    """Count the decision and move the state, only if the proposal is still awaiting it."""
    approved = approval.decision is Decision.APPROVED
    return await PROPOSAL.move_planned(
        work,
        lifecycles.COUNT_APPROVAL if approved else lifecycles.REJECT,
        proposal_id,
        _APPROVE if approved else _REJECT,
        {"now": now, "digest": approval.payload_digest},
        actor_id=viewer.id,
        details={"approval_id": approval.id},
        inserting=[approval],
    )


async def _settle_task(
    work: UnitOfWork,
    viewer: Viewer,
    task: HumanTask,
    approval: Approval,
    decided: bool,
    now: datetime,
) -> HumanTask:
    """Complete or reopen the approval task, by compare-and-set (``_settled``)."""
    parameters: dict[str, Any] = {"now": now, "decider": viewer.id}
    if decided:
        parameters["response"] = {
            "decision": approval.decision.value,
            "payloadDigest": approval.payload_digest,
            **({"reason": approval.reason} if approval.reason else {}),
        }
    settled = await TASK.move_planned(
        work,
        lifecycles.COMPLETE if decided else lifecycles.REOPEN,
        task.id,
        _COMPLETE if decided else _REOPEN,
        parameters,
        actor_id=viewer.id,
    )
    if settled is None:
        await TASK.refuse(
            work,
            task.id,
            lambda _: TaskClaimedByOther("Another reviewer claimed this approval task just now."),
        )
    return settled


# A keyed decision answers with the approval it recorded, as it stands now.
DECIDED = idempotency.Kept.row(
    "approval_id",
    lambda done: done.approval.id,
    lambda work, row_id: load_result(work.session, row_id, replayed=True),
)


async def load_result(session: AsyncSession, approval_id: str, *, replayed: bool) -> DecideResult:
    """A recorded decision as it stands now: the approval, its proposal and task."""
    approval = await session.get(Approval, approval_id, populate_existing=True)
    assert approval is not None  # approvals are never deleted
    proposal = await session.get(Proposal, approval.proposal_id, populate_existing=True)
    assert proposal is not None
    task = await approval_task(session, proposal.id)
    return DecideResult(proposal=proposal, approval=approval, task=task, replayed=replayed)
