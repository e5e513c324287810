"""Single-use approval links (docs/design.md section 5.7).

Reading a link changes nothing, so mail scanners and previews decide nothing. Deciding
through it goes through ``apply_decision`` as its reviewer (four eyes, quorum and the
deadline apply) and spends the link by compare-and-set in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import (
    APPROVAL_LINK_TTL_DEFAULT_SECONDS,
    APPROVAL_LINK_TTL_MAX_SECONDS,
    APPROVAL_LINK_TTL_MIN_SECONDS,
    REASON_MAX_CHARS,
    REASON_MIN_CHARS,
)
from signoff.errors import (
    ApprovalLinkUnusable,
    NotFound,
    PayloadDigestMismatch,
    SignoffError,
    ValidationFailed,
)
from signoff.models import (
    APPROVAL_KIND,
    Actor,
    ApprovalLink,
    ApprovalLinkState,
    Decision,
    HumanTask,
    Proposal,
    ProposalState,
    Role,
    Target,
)
from signoff.resolvers.access.eligibility import is_eligible
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.approval.approvals import DecideResult, apply_decision
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import APPROVAL_LINK
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.reach.link_minting import (
    CreatedLink,
    hash_link_token,
    mint_link,
    require_may_decide,
    reviewer_as_now,
)
from signoff.validation import optional_text, require_range


async def create_approval_link(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    task_id: str,
    reviewer_id: str,
    ttl_seconds: int | None = None,
) -> CreatedLink:
    """A link for ``reviewer_id`` to decide an approval task once (operators and admins, or
    a reviewer for themself), expiring after ``ttl_seconds`` (at most 72 h) or with the
    proposal's deadline, whichever comes first."""
    if reviewer_id == viewer.id:
        require_role(viewer, Role.REVIEWER)
    else:
        require_role(viewer, Role.OPERATOR)
    ttl = require_range(
        ttl_seconds,
        "ttlSeconds",
        APPROVAL_LINK_TTL_MIN_SECONDS,
        APPROVAL_LINK_TTL_MAX_SECONDS,
        APPROVAL_LINK_TTL_DEFAULT_SECONDS,
    )
    session, now = work.session, work.now()
    task = await session.get(HumanTask, task_id)
    if task is None or task.kind != APPROVAL_KIND or task.proposal_id is None:
        raise NotFound("No such approval task.", field="taskId")
    proposal = await session.get(Proposal, task.proposal_id)
    assert proposal is not None  # approval tasks always point at their proposal
    reviewer = await reviewer_as_now(session, reviewer_id)
    await require_may_decide(session, reviewer, proposal, now)
    created = await mint_link(
        work,
        task=task,
        proposal=proposal,
        reviewer_id=reviewer.id,
        ttl_seconds=ttl,
        created_by_id=viewer.id,
        actor_id=viewer.id,
    )
    await work.commit()
    return created


async def revoke_approval_link(*, work: UnitOfWork, viewer: Viewer, link_id: str) -> ApprovalLink:
    """Revoke a link (its reviewer, its maker, operators and admins)."""
    link = await require_row(work.session, ApprovalLink, link_id, "No such approval link.")
    if viewer.id not in (link.reviewer_id, link.created_by_id):
        require_role(viewer, Role.OPERATOR)
    revoked = await APPROVAL_LINK.move(work, lifecycles.REVOKE_LINK, link.id, actor_id=viewer.id)
    if revoked is None:
        await APPROVAL_LINK.refuse(work, link.id, _unusable)
    await work.commit()
    return revoked


def _unusable(link: ApprovalLink) -> Exception:
    state = str(link.state)
    return ApprovalLinkUnusable(f"The link is already {state.lower()}.", reason=state)


@dataclass(frozen=True)
class LinkPage:
    """What the confirmation page shows."""

    link: ApprovalLink
    proposal: Proposal
    target: Target
    reviewer: Actor


async def read_link(*, session: AsyncSession, token: str, now: datetime) -> LinkPage:
    """The link and what it would decide; refused when unknown, used, revoked or expired,
    or when its proposal no longer awaits approval (decided by others, cancelled, expired:
    showing the form would only lead to a refusal). Reads only."""
    link = await _usable_link(session, token, now)
    proposal = await session.get(Proposal, link.proposal_id)
    assert proposal is not None
    await _require_reviewer_may_decide(session, link, proposal)
    if proposal.state != ProposalState.APPROVAL_REQUIRED:
        raise ApprovalLinkUnusable(
            f"This proposal no longer awaits approval: it is {proposal.state}.",
            reason="SETTLED",
        )
    if proposal.payload_digest != link.payload_digest:
        # The page would show content other than the digest the link decides.
        raise ApprovalLinkUnusable(
            "This proposal changed (amended, or given a new deadline) after the link was "
            "made; ask for a new link to review what it is now.",
            reason="CHANGED",
        )
    target = await session.get(Target, proposal.target_id)
    reviewer = await session.get(Actor, link.reviewer_id)
    assert target is not None and reviewer is not None
    return LinkPage(link, proposal, target, reviewer)


async def _usable_link(session: AsyncSession, token: str, now: datetime) -> ApprovalLink:
    link = (
        await session.exec(
            select(ApprovalLink)
            .where(col(ApprovalLink.token_hash) == hash_link_token(token))
            .execution_options(populate_existing=True)
        )
    ).first()
    if link is None:
        raise ApprovalLinkUnusable("This approval link is not valid.", reason="UNKNOWN")
    if link.state == ApprovalLinkState.USED:
        raise ApprovalLinkUnusable("This approval link has already been used.", reason="USED")
    if link.state == ApprovalLinkState.REVOKED:
        raise ApprovalLinkUnusable("This approval link was revoked.", reason="REVOKED")
    if link.expires_at <= now:
        raise ApprovalLinkUnusable("This approval link has expired.", reason="EXPIRED")
    return link


async def _require_reviewer_may_decide(
    session: AsyncSession, link: ApprovalLink, proposal: Proposal
) -> None:
    """A link decides only while its reviewer may decide the proposal's queue now (enabled,
    a member, with a way in left): once they may not, it shows and decides nothing."""
    if not await is_eligible(session, link.reviewer_id, proposal.queue_id):
        raise ApprovalLinkUnusable(
            "This link no longer works: its reviewer may not decide this queue now.",
            reason="REVIEWER_INELIGIBLE",
        )


async def decide_by_link(
    *,
    work: UnitOfWork,
    token: str,
    payload_digest: str,
    decision: Decision,
    reason: str | None = None,
) -> DecideResult:
    """Decide, once, as the link's reviewer, the digest the confirmation page showed."""
    try:
        return await _decide_by_link(work, token, payload_digest, decision, reason)
    except SignoffError:
        await work.rollback()  # the link stays unused when the decision is refused
        raise


async def _decide_by_link(
    work: UnitOfWork, token: str, payload_digest: str, decision: Decision, reason: str | None
) -> DecideResult:
    session, now = work.session, work.now()
    reason = optional_text(reason or None, "reason", REASON_MIN_CHARS, REASON_MAX_CHARS)
    link = await _usable_link(session, token, now)
    if payload_digest != link.payload_digest:
        raise ValidationFailed("The form does not name the link's digest.", field="payloadDigest")
    proposal = await session.get(Proposal, link.proposal_id, populate_existing=True)
    assert proposal is not None
    if proposal.payload_digest != link.payload_digest:
        raise PayloadDigestMismatch(
            "The proposal changed after this link was made; ask for a new one.",
            expected=proposal.payload_digest,
        )
    await _require_reviewer_may_decide(session, link, proposal)
    reviewer = await reviewer_as_now(session, link.reviewer_id)
    spent = await APPROVAL_LINK.move(
        work,
        lifecycles.USE_LINK,
        link.id,
        actor_id=reviewer.id,
        guard=col(ApprovalLink.expires_at) > now,
        values={"used_at": now},
        details={"decision": decision.value, "payload_digest": payload_digest},
    )
    if spent is None:
        # Used by a concurrent POST, or revoked with its reviewer's access meanwhile.
        await APPROVAL_LINK.refuse(work, link.id, _unusable)
    # The digest the confirmation page showed, which the link was minted with.
    result = await apply_decision(
        work, reviewer, proposal, decision, reason, payload_digest=link.payload_digest
    )
    await work.commit()
    return result
