"""A written proposal's relations, read by its writer where writers are serialised (SQLite),
for the proposals an agent in this process waits on: what its frame shows besides the
record (approvals and approvers, revisions and who amended them, delivery attempts, the
target, who executed it), as the writer's commit leaves them, so that frame reads nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.models import Actor, Approval, DeliveryAttempt, Proposal, ProposalRevision, Target
from signoff.models.records import RowsWhere, Via, read_all

# Who the proposals' approvals and amendments name, read with them.
_APPROVERS = Via(Approval, "approver_id", "proposal_id")
_AMENDERS = Via(ProposalRevision, "amended_by_id", "proposal_id")


@dataclass(frozen=True, slots=True)
class ProposalRelations:
    """One proposal's relations, each in its loader's order (``schema.loaders.Loaders``)."""

    approvals: list[Approval]
    # Empty for a proposal never amended, which has no revision rows (``ProposalRevision``).
    revisions: list[ProposalRevision]
    attempts: list[DeliveryAttempt]
    target: Target | None
    # By id: the approvers, those who amended it and who executed it.
    actors: dict[str, Actor]


async def read_relations(
    session: AsyncSession, proposals: Sequence[Proposal]
) -> dict[str, ProposalRelations]:
    """The relations of ``proposals`` (records read in ``session``'s transaction), by id."""
    if not proposals:
        return {}
    ids = [p.id for p in proposals]
    amended = [p.id for p in proposals if p.revision > 1]
    executors = sorted({p.executed_by_id for p in proposals if p.executed_by_id is not None})
    approvals = RowsWhere(Approval, "proposal_id", ids, "created_at")
    attempts = RowsWhere(DeliveryAttempt, "proposal_id", ids, "id")
    targets = RowsWhere(Target, "id", sorted({p.target_id for p in proposals}))
    revisions = RowsWhere(ProposalRevision, "proposal_id", amended, "revision")
    actors = [
        RowsWhere(Actor, "id", ids, via=_APPROVERS),
        RowsWhere(Actor, "id", amended, via=_AMENDERS),
        RowsWhere(Actor, "id", executors),
    ]
    # Reads without keys are left out: most proposals were never amended nor executed.
    wanted = [read for read in (approvals, attempts, targets, revisions, *actors) if read.keys]
    # By the read (its keys are lists, so the read itself is no key).
    found = dict(zip(map(id, wanted), await read_all(session, wanted), strict=True))
    by_actor = {actor.id: actor for read in actors for actor in found.get(id(read), [])}
    by_target = {target.id: target for target in found[id(targets)]}
    approvals_of, revisions_of, attempts_of = (
        _by_proposal(found.get(id(read), [])) for read in (approvals, revisions, attempts)
    )
    return {
        p.id: ProposalRelations(
            approvals_of[p.id],
            revisions_of[p.id],
            attempts_of[p.id],
            by_target.get(p.target_id),
            by_actor,
        )
        for p in proposals
    }


def _by_proposal(rows: list[Any]) -> defaultdict[str, list[Any]]:
    """``rows`` by their ``proposal_id``, in the order read."""
    by_id: defaultdict[str, list[Any]] = defaultdict(list)
    for row in rows:
        by_id[row.proposal_id].append(row)
    return by_id
