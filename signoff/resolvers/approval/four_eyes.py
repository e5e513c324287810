"""Four eyes by person (docs/design.md section 4.4): who may approve a proposal's current
revision, when actors linked to one person (``Actor.person``) count as that person.

A person never decides content they proposed or, by default, content they wrote as an
amendment, and decides each revision once whichever of their actors they use. The
unique (proposal, revision, person) approval row is what holds under concurrent
decisions; the look here also catches actors linked after one of them decided.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import sqlalchemy as sa
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import AlreadyDecided, AmenderApprovalForbidden, SelfApprovalForbidden
from signoff.models import (
    Actor,
    Approval,
    Decision,
    Proposal,
    ProposalRevision,
    ProposalState,
    Target,
)
from signoff.models.actor import person_of
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import PROPOSAL
from signoff.resolvers.core.work import UnitOfWork


async def persons(session: AsyncSession, actor_ids: Iterable[str]) -> dict[str, str]:
    """Each actor's person as it stands now."""
    linked = await _links(session, actor_ids)
    return {actor_id: person_of(actor_id, person) for actor_id, person in linked.items()}


async def _links(
    session: AsyncSession, actor_ids: Iterable[str], known: Mapping[str, str | None] | None = None
) -> dict[str, str | None]:
    """Each actor's ``person`` column: ``None`` for an actor linked to no one. ``known``:
    the columns as the caller read them in this transaction, if it read every one."""
    wanted = set(actor_ids)
    if known is not None and wanted <= known.keys():
        return {actor_id: known[actor_id] for actor_id in wanted}
    rows = await session.exec(
        select(Actor.id, Actor.person).where(col(Actor.id).in_(sorted(set(actor_ids))))
    )
    return dict(rows.all())


async def revision_author(session: AsyncSession, proposal: Proposal) -> str | None:
    """Who wrote the proposal's current revision: its amender (``None`` as proposed)."""
    if proposal.revision <= 1:
        return None
    stmt = select(ProposalRevision.amended_by_id).where(
        ProposalRevision.proposal_id == proposal.id,
        ProposalRevision.revision == proposal.revision,
    )
    return (await session.exec(stmt)).first()


async def require_four_eyes(
    session: AsyncSession,
    viewer: Viewer,
    proposal: Proposal,
    decision: Decision,
    *,
    links: Mapping[str, str | None] | None = None,
) -> str:
    """Refuse a decision by the proposal's proposer, by the author of its current revision
    (an approval, unless the target allows it) or by a person who already decided this
    revision as another actor; the viewer's person. ``links``: actors' ``person`` columns
    the caller read in this transaction (the rest are read here)."""
    author = await revision_author(session, proposal) if decision is Decision.APPROVED else None
    linked = await _links(
        session, [viewer.id, proposal.proposed_by_id, *([author] if author else [])], links
    )
    known = {actor_id: person_of(actor_id, person) for actor_id, person in linked.items()}
    mine = known[viewer.id]
    if known[proposal.proposed_by_id] == mine:
        raise SelfApprovalForbidden("You proposed this action; another person must decide it.")
    if author is not None and known[author] == mine:
        target = await session.get(Target, proposal.target_id)
        assert target is not None  # proposals reference their target
        if not target.amender_may_approve:
            raise AmenderApprovalForbidden(
                f"You wrote revision {proposal.revision} of this proposal (your amendment); "
                "another person must approve what you wrote."
            )
    if linked[viewer.id] is not None:
        # Linked (even to its own id, when another actor was linked to it): another of
        # the person's actors may have decided. Unlinked, the unique key is enough.
        await _require_person_undecided(session, proposal, mine)
    return mine


async def _require_person_undecided(session: AsyncSession, proposal: Proposal, mine: str) -> None:
    stmt = (
        select(Actor.name)
        .join(Approval, col(Approval.approver_id) == col(Actor.id))
        .where(
            Approval.proposal_id == proposal.id,
            Approval.revision == proposal.revision,
            sa.or_(col(Approval.person) == mine, col(Actor.person) == mine),
        )
    )
    decided_as = (await session.exec(stmt)).first()
    if decided_as is not None:
        raise AlreadyDecided(
            f"You have already decided this revision as {decided_as}; one person decides once."
        )


async def recount(work: UnitOfWork, actor_ids: Iterable[str]) -> list[str]:
    """After actors were linked into one person: each proposal still awaiting approval
    that they approved counts that person once, and not at all where the person proposed
    or wrote the revision. Compare-and-set on the count and digest
    read, again until it holds (a decision meanwhile changes the count); the ids of the
    proposals whose count changed."""
    session = work.session
    stmt = (
        select(Proposal.id)
        .join(
            Approval,
            sa.and_(
                col(Approval.proposal_id) == col(Proposal.id),
                col(Approval.revision) == col(Proposal.revision),
            ),
        )
        .where(
            col(Approval.approver_id).in_(sorted(set(actor_ids))),
            Approval.decision == Decision.APPROVED,
            Proposal.state == ProposalState.APPROVAL_REQUIRED,
        )
        .distinct()
    )
    changed = []
    for proposal_id in (await session.exec(stmt)).all():
        if await _recount_one(work, proposal_id):
            changed.append(proposal_id)
    return changed


async def _counted_persons(session: AsyncSession, proposal: Proposal) -> int:
    """The persons, as linked now, whose approval counts for the current revision: not
    its proposer, nor (unless the target allows it) its author."""
    approvers = (
        await session.exec(
            select(Approval.approver_id).where(
                Approval.proposal_id == proposal.id,
                Approval.revision == proposal.revision,
                Approval.decision == Decision.APPROVED,
            )
        )
    ).all()
    author = await revision_author(session, proposal)
    if author is not None:
        target = await session.get(Target, proposal.target_id)
        assert target is not None  # proposals reference their target
        if target.amender_may_approve:
            author = None
    authors = [proposal.proposed_by_id, *([author] if author else [])]
    known = await persons(session, [*approvers, *authors])
    excluded = {known[actor_id] for actor_id in authors}
    return len({known[actor_id] for actor_id in approvers} - excluded)


async def _recount_one(work: UnitOfWork, proposal_id: str) -> bool:
    session = work.session
    while True:
        proposal = await session.get(Proposal, proposal_id, populate_existing=True)
        assert proposal is not None
        if proposal.state != ProposalState.APPROVAL_REQUIRED:
            return False
        count = await _counted_persons(session, proposal)
        # Linking only ever lowers a count (moving an actor from one person to another
        # may leave it low: the safe side, and the next approval is counted as ever).
        if count >= proposal.approval_count:
            return False
        moved = await PROPOSAL.move(
            work,
            lifecycles.RECOUNT,
            proposal.id,
            actor_id=None,
            guard=sa.and_(
                col(Proposal.approval_count) == proposal.approval_count,
                col(Proposal.payload_digest) == proposal.payload_digest,
            ),
            values={"approval_count": count},
            details={"before": proposal.approval_count, "after": count},
        )
        if moved is not None:
            return True
