"""Amending a proposal, and the proposing agent accepting an amendment (docs/design.md
section 4.17).

An amendment and an approval are each a compare-and-set on the payload digest, so an
approval of an earlier revision never counts for a later one, whichever commits first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import col

from signoff.constants import REASON_MAX_CHARS, REASON_MIN_CHARS
from signoff.errors import (
    AmendmentNotAllowed,
    Forbidden,
    NoAmendmentPending,
    PayloadDigestMismatch,
    TaskClaimedByOther,
    ValidationFailed,
)
from signoff.jsonvalues import require_object
from signoff.models import HumanTask, Proposal, ProposalRevision, ProposalState, Target
from signoff.models.proposal import payload_digest_of
from signoff.models.task import workable_by
from signoff.patches import diff, merge_patch
from signoff.resolvers.access.rules import Viewer, require_reviewer_of
from signoff.resolvers.approval import policies as approval_policies
from signoff.resolvers.approval.approvals import (
    approval_task,
    held_by_other,
    queue_if_reached,
    require_awaiting,
)
from signoff.resolvers.approval.proposals import check_payload, get_proposal
from signoff.resolvers.core import idempotency, lifecycles
from signoff.resolvers.core.lifecycles import PROPOSAL, TASK
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.validation import require_text


@dataclass(frozen=True)
class AmendResult:
    proposal: Proposal
    revision: ProposalRevision
    replayed: bool


@dataclass(frozen=True)
class AcceptResult:
    proposal: Proposal
    replayed: bool


async def amend_proposal(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    proposal_id: str,
    based_on_digest: str,
    reason: str,
    payload: Any = None,
    patch: Any = None,
    idempotency_key: str | None = None,
) -> AmendResult:
    """Replace the payload (``payload``) or merge-patch it (``patch``, RFC 7386): a new
    revision and digest, earlier approvals void, the diff audited and published."""
    if (payload is None) == (patch is None):
        raise ValidationFailed("Give exactly one of payload and patch.", field="payload")
    reason = require_text(reason, "reason", REASON_MIN_CHARS, REASON_MAX_CHARS)
    call = idempotency.Keyed.of(
        "amendProposal",
        idempotency_key,
        {
            "proposal_id": proposal_id,
            "based_on_digest": based_on_digest,
            "payload": payload,
            "patch": patch,
            "reason": reason,
        },
    )

    async def amend() -> AmendResult:
        proposal = await get_proposal(session=work.session, viewer=viewer, proposal_id=proposal_id)
        require_reviewer_of(viewer, proposal.queue_id)
        target = await work.session.get(Target, proposal.target_id)
        assert target is not None  # proposals reference existing targets
        if not target.amendable:
            raise AmendmentNotAllowed(
                f"Target {target.name!r} does not allow amendments; approve or reject."
            )
        now = work.now()
        require_awaiting(proposal, now)
        if proposal.payload_digest != based_on_digest:
            raise PayloadDigestMismatch(
                "basedOnDigest is not the proposal's digest; reload it and amend what is there.",
                expected=proposal.payload_digest,
            )
        amended = require_object(
            payload if patch is None else merge_patch(proposal.payload, patch), "payload"
        )
        check_payload(amended, target)
        if amended == proposal.payload:
            raise ValidationFailed("The amendment changes nothing.", field="payload")
        task = await approval_task(work.session, proposal.id)
        if task is not None and held_by_other(task, viewer, now):
            raise TaskClaimedByOther("Another reviewer has claimed this approval task.")
        return await _apply(work, viewer, proposal, target, task, amended, reason, now)

    async def replay(work: UnitOfWork, revision_id: str) -> AmendResult:
        revision = await work.session.get(ProposalRevision, revision_id)
        assert revision is not None  # revisions are never deleted
        proposal = await work.session.get(Proposal, revision.proposal_id, populate_existing=True)
        assert proposal is not None
        return AmendResult(proposal=proposal, revision=revision, replayed=True)

    kept = idempotency.Kept.row("revision_id", lambda done: done.revision.id, replay)
    result, _ = await idempotency.once(work, viewer, call, amend, kept)
    return result


async def _apply(
    work: UnitOfWork,
    viewer: Viewer,
    proposal: Proposal,
    target: Target,
    task: HumanTask | None,
    amended: dict[str, Any],
    reason: str,
    now: datetime,
) -> AmendResult:
    """The compare-and-set on the digest the amendment was based on, its revision rows and
    the approval task's new context; the caller commits."""
    old_payload, old_digest, old_revision = (
        proposal.payload,
        proposal.payload_digest,
        proposal.revision,
    )
    revision = old_revision + 1
    digest = payload_digest_of(proposal, payload=amended, revision=revision)
    changes = diff(old_payload, amended)
    values: dict[str, Any] = {
        "payload": amended,
        "payload_digest": digest,
        "revision": revision,
        "approval_count": 0,
        "awaiting_proposer": target.amendments_need_proposer,
    }
    policy = approval_policies.match(target, amended)
    if policy is not None:
        # The policy decides again on the amended payload, so an amendment can never
        # lower the bar below its rule; a person amended it, so at least one approves.
        values |= {
            "required_approvals": max(1, policy.approvals),
            "queue_id": policy.queue_id or proposal.queue_id,
            "policy_rule": policy.recorded(),
        }
    updated = await PROPOSAL.move(
        work,
        lifecycles.AMEND,
        proposal.id,
        actor_id=viewer.id,
        guard=sa.and_(col(Proposal.payload_digest) == old_digest, col(Proposal.expires_at) > now),
        values=values,
        details={
            "revision": revision,
            "from_digest": old_digest,
            "payload_digest": digest,
            "diff": changes,
            "reason": reason,
            **({} if policy is None else {"policy_rule": policy.recorded()}),
        },
        published={"diff": changes, "payloadDigest": digest},
    )
    if updated is None:
        await PROPOSAL.refuse(work, proposal.id, _amended_meanwhile(now))
    session = work.session
    if old_revision == 1:  # the revision as proposed, kept once there is a second
        session.add(
            ProposalRevision(
                proposal_id=proposal.id,
                revision=1,
                payload=old_payload,
                payload_digest=old_digest,
                diff=[],
                created_at=updated.created_at,
            )
        )
    row = ProposalRevision(
        proposal_id=proposal.id,
        revision=revision,
        payload=amended,
        payload_digest=digest,
        diff=changes,
        amended_by_id=viewer.id,
        reason=reason,
        created_at=now,
    )
    session.add(row)
    if task is not None:
        await _reopen_task(work, viewer, task, updated, now)
    return AmendResult(proposal=updated, revision=row, replayed=False)


async def _reopen_task(
    work: UnitOfWork, viewer: Viewer, task: HumanTask, proposal: Proposal, now: datetime
) -> None:
    """The approval task shows the new revision, open for every reviewer again."""
    context = {
        **task.context,
        "payload": proposal.payload,
        "payloadDigest": proposal.payload_digest,
        "revision": proposal.revision,
        "requiredApprovals": proposal.required_approvals,
    }
    reopened = await TASK.move(
        work,
        lifecycles.REOPEN,
        task.id,
        actor_id=viewer.id,
        guard=workable_by(viewer.id, now),
        values={
            "context": context,
            "queue_id": proposal.queue_id,  # the policy may ask another queue now
            "assignee_id": None,
            "claim_expires_at": None,
        },
    )
    if reopened is None:
        await TASK.refuse(
            work,
            task.id,
            lambda _: TaskClaimedByOther("Another reviewer claimed this approval task just now."),
        )


async def accept_amendment(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    proposal_id: str,
    payload_digest: str,
    idempotency_key: str | None = None,
) -> AcceptResult:
    """The proposing agent accepts the amended revision; if its quorum is already in, the
    proposal is queued for delivery."""
    call = idempotency.Keyed.of(
        "acceptAmendment",
        idempotency_key,
        {"proposal_id": proposal_id, "payload_digest": payload_digest},
    )

    async def accept() -> AcceptResult:
        proposal = await get_proposal(session=work.session, viewer=viewer, proposal_id=proposal_id)
        if proposal.proposed_by_id != viewer.id:
            raise Forbidden("Only the agent that proposed this action accepts its amendments.")
        now = work.now()
        require_awaiting(proposal, now)
        if not proposal.awaiting_proposer:
            raise NoAmendmentPending("No amendment of this proposal waits for your acceptance.")
        if proposal.payload_digest != payload_digest:
            raise PayloadDigestMismatch(
                "payloadDigest is not the proposal's; reload it and review the amendment.",
                expected=proposal.payload_digest,
            )
        return AcceptResult(proposal=await _accept(work, viewer, proposal, now), replayed=False)

    async def replay(work: UnitOfWork, proposal_id: str) -> AcceptResult:
        proposal = await require_row(
            work.session, Proposal, proposal_id, "No such proposal.", refresh=True
        )
        return AcceptResult(proposal=proposal, replayed=True)

    kept = idempotency.Kept.row("proposal_id", lambda done: done.proposal.id, replay)
    result, _ = await idempotency.once(work, viewer, call, accept, kept)
    return result


async def _accept(work: UnitOfWork, viewer: Viewer, proposal: Proposal, now: datetime) -> Proposal:
    reached = col(Proposal.approval_count) >= col(Proposal.required_approvals)
    updated = await PROPOSAL.move(
        work,
        lifecycles.ACCEPT_AMENDMENT,
        proposal.id,
        actor_id=viewer.id,
        guard=sa.and_(
            col(Proposal.payload_digest) == proposal.payload_digest,
            col(Proposal.awaiting_proposer).is_(True),
            col(Proposal.expires_at) > now,
        ),
        values={
            "awaiting_proposer": False,
            **queue_if_reached(reached, now),
        },
        details={"revision": proposal.revision, "payload_digest": proposal.payload_digest},
    )
    if updated is None:
        await PROPOSAL.refuse(work, proposal.id, _accepted_meanwhile(now))
    if updated.state in (ProposalState.QUEUED, ProposalState.APPROVED):
        # The quorum was already in: the acceptance queued it. Audit the acceptance too,
        # and close the approval task with the decision the reviewers made.
        record(
            work,
            Happening(
                entity_type="proposal",
                entity_id=updated.id,
                actor_id=viewer.id,
                action="proposal.amendment_accepted",
                details={"revision": updated.revision, "payload_digest": updated.payload_digest},
            ),
        )
        task = await approval_task(work.session, updated.id)
        if task is not None:
            await TASK.move(
                work,
                lifecycles.COMPLETE,
                task.id,
                actor_id=viewer.id,
                values={
                    "response": {"decision": "APPROVED"},
                    "assignee_id": None,
                    "claim_expires_at": None,
                    "completed_at": now,
                },
            )
    return updated


def _amended_meanwhile(now: datetime) -> Callable[[Proposal], Exception]:
    """Why an amendment did not apply, given the proposal as it now is."""

    def explain(current: Proposal) -> Exception:
        require_awaiting(current, now)  # decided (or expired) meanwhile: raises
        return PayloadDigestMismatch(
            "The proposal was amended by someone else just now; reload it.",
            expected=current.payload_digest,
        )

    return explain


def _accepted_meanwhile(now: datetime) -> Callable[[Proposal], Exception]:
    """Why accepting an amendment did not apply, given the proposal as it now is."""

    def explain(current: Proposal) -> Exception:
        require_awaiting(current, now)
        if not current.awaiting_proposer:
            return NoAmendmentPending("The amendment was accepted just now.")
        return PayloadDigestMismatch(
            "The proposal was amended again just now; review the new revision.",
            expected=current.payload_digest,
        )

    return explain
