"""Where the viewer stands on a proposal: what they decided of its current revision (as
any of their linked actors), and whether they may approve or reject it now, with the
refusal either would meet. A page offers only the decisions this allows, so a reviewer
who approved one of two required approvals is told they are waiting rather than offered
an Approve that answers ALREADY_DECIDED."""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.errors import AlreadyDecided, SignoffError
from signoff.models import Actor, Approval, Decision, Proposal
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.approval.approvals import check_decidable
from signoff.resolvers.approval.four_eyes import persons
from signoff.resolvers.approval.proposals import get_proposal


@dataclass(frozen=True)
class Standing:
    """The viewer's decision on the current revision (``None``: none yet) and the actor it
    was made as; what they may do now, and the refusal that stops each move."""

    decision: Decision | None
    decided_as: str | None
    approve_refusal: SignoffError | None
    reject_refusal: SignoffError | None

    @property
    def may_approve(self) -> bool:
        return self.approve_refusal is None

    @property
    def may_reject(self) -> bool:
        return self.reject_refusal is None


async def viewer_standing(*, session: AsyncSession, viewer: Viewer, proposal_id: str) -> Standing:
    """The viewer's standing on the proposal (which they must be able to read)."""
    proposal = await get_proposal(session=session, viewer=viewer, proposal_id=proposal_id)
    decided = await _decision_of(session, viewer, proposal)
    if decided is not None:
        refusal = AlreadyDecided(f"You have already decided this revision as {decided[1]}.")
        return Standing(decided[0], decided[1], refusal, refusal)
    return Standing(
        None,
        None,
        await _refusal(session, viewer, proposal, Decision.APPROVED),
        await _refusal(session, viewer, proposal, Decision.REJECTED),
    )


async def _decision_of(
    session: AsyncSession, viewer: Viewer, proposal: Proposal
) -> tuple[Decision, str] | None:
    """The decision the viewer's person made on the current revision, and as whom."""
    mine = (await persons(session, [viewer.id]))[viewer.id]
    stmt = (
        select(Approval.decision, Actor.name)
        .join(Actor, col(Approval.approver_id) == col(Actor.id))
        .where(
            Approval.proposal_id == proposal.id,
            Approval.revision == proposal.revision,
            (col(Approval.approver_id) == viewer.id)
            | (col(Approval.person) == mine)
            | (col(Actor.person) == mine),
        )
    )
    row = (await session.exec(stmt)).first()
    return None if row is None else (Decision(row[0]), row[1])


async def _refusal(
    session: AsyncSession, viewer: Viewer, proposal: Proposal, decision: Decision
) -> SignoffError | None:
    """The refusal a decision would meet now (the checks a decision makes first), if any."""
    try:
        await check_decidable(session, viewer, proposal, decision, clock.now())
    except SignoffError as refusal:
        return refusal
    return None
