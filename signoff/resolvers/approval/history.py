"""History: the proposals no longer waiting for approval (decided, delivered or not,
rejected, expired), most recently decided first, under the read rule of ``proposals``."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.database import SearchableText
from signoff.errors import ValidationFailed
from signoff.models import Approval, Proposal, ProposalState, Role
from signoff.models.records import Along
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.core.pagination import Equals, Matches, OneOf, Order, Page, Where, paginate
from signoff.validation import require_text

# Every state but waiting for approval: a proposal leaves that state once, when decided.
HISTORY_STATES = frozenset(ProposalState) - {ProposalState.APPROVAL_REQUIRED}

HISTORY_ORDER = (
    Order(col(Proposal.decided_at), descending=True),
    Order(col(Proposal.id), descending=True),
)

SEARCH_MAX_CHARS = 200


@dataclass(frozen=True)
class HistoryFilter:
    """What a history page is narrowed to; each one left out narrows nothing."""

    states: Collection[ProposalState] | None = None
    target_id: str | None = None
    proposed_by_id: str | None = None
    reviewer_id: str | None = None
    decided_after: datetime | None = None
    decided_before: datetime | None = None
    search: str | None = None


async def list_history(
    *,
    session: AsyncSession,
    viewer: Viewer,
    narrowed: HistoryFilter = HistoryFilter(),
    first: int | None = None,
    after: str | None = None,
    along: Sequence[Along] = (),
) -> Page[Proposal]:
    """Decided proposals the viewer may see, most recently decided first: agents their
    own, reviewers those of their queues, staff all; the reads ``along`` the page
    (``paginate``) see its proposals only."""
    require_role(viewer, Role.AGENT, Role.REVIEWER, Role.OPERATOR)
    where = _visible(viewer) + _narrowed(narrowed)
    return await paginate(
        session, Proposal, where, HISTORY_ORDER, first=first, after=after, along=along
    )


def _visible(viewer: Viewer) -> list[Where]:
    if viewer.role is Role.AGENT:
        return [Equals(col(Proposal.proposed_by_id), viewer.id)]
    if viewer.role is Role.REVIEWER:
        return [OneOf(col(Proposal.queue_id), viewer.queue_ids)]
    return []


def _narrowed(narrowed: HistoryFilter) -> list[Where]:
    where: list[Where] = [OneOf(col(Proposal.state), sorted(_states(narrowed.states)))]
    if narrowed.target_id is not None:
        where.append(Equals(col(Proposal.target_id), narrowed.target_id))
    if narrowed.proposed_by_id is not None:
        where.append(Equals(col(Proposal.proposed_by_id), narrowed.proposed_by_id))
    if narrowed.reviewer_id is not None:
        where.append(Matches("decided_by", _decided_by, narrowed.reviewer_id))
    return where + _decided_between(narrowed) + _searched(narrowed.search)


def _states(states: Collection[ProposalState] | None) -> frozenset[ProposalState]:
    if states is None:
        return HISTORY_STATES
    if ProposalState.APPROVAL_REQUIRED in states:
        raise ValidationFailed(
            "History holds decided proposals; list those waiting for approval with proposals.",
            field="states",
        )
    return frozenset(states)


def _decided_between(narrowed: HistoryFilter) -> list[Where]:
    since, until = narrowed.decided_after, narrowed.decided_before
    if since is not None and until is not None and since >= until:
        raise ValidationFailed(
            "decidedAfter must come before decidedBefore.", field="decidedBefore"
        )
    where: list[Where] = []
    if since is not None:
        where.append(Matches("decided_after", _decided_after, since))
    if until is not None:
        where.append(Matches("decided_before", _decided_before, until))
    return where


def _searched(search: str | None) -> list[Where]:
    if search is None or not search.strip():
        return []
    return [Matches("subject_contains", _subject_contains, _pattern(search))]


def _decided_by(reviewer: sa.BindParameter[str]) -> sa.ColumnElement[bool]:
    """Proposals the reviewer approved or rejected (any revision)."""
    return sa.exists().where(
        col(Approval.proposal_id) == col(Proposal.id), col(Approval.approver_id) == reviewer
    )


def _decided_after(at: sa.BindParameter[datetime]) -> sa.ColumnElement[bool]:
    return col(Proposal.decided_at) >= at


def _decided_before(at: sa.BindParameter[datetime]) -> sa.ColumnElement[bool]:
    return col(Proposal.decided_at) < at


def _subject_contains(pattern: sa.BindParameter[str]) -> sa.ColumnElement[bool]:
    """The subject's JSON text holds the words, whatever their case."""
    return SearchableText(col(Proposal.subject)).like(pattern, escape="\\")


def _pattern(search: str) -> str:
    """A LIKE pattern for ``search`` taken literally, lower-cased."""
    words = require_text(search.strip(), "search", 1, SEARCH_MAX_CHARS).lower()
    escaped = words.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
