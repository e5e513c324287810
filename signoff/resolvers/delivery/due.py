"""The conditions delivery's statements share: which proposals are due for an attempt, and
whether a worker still holds the lease it claimed (the fencing token, docs/design.md
sections 4.6 and 6.4)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import and_, exists, or_
from sqlmodel import col

from signoff.models import Proposal, ProposalState, Target
from signoff.models.arrays import pairs_among
from signoff.resolvers.core import lifecycles

PENDING = tuple(state.value for state in lifecycles.PENDING)


def due(now: datetime) -> Any:
    """Proposals a worker may claim now: pending and due, or in flight with a lapsed lease;
    either way, of a target that is not paused."""
    return and_(due_rows(now), target_not_paused())


def due_rows(now: datetime) -> Any:
    """``due`` on the proposal's own columns only (its target is checked by the caller)."""
    return or_(
        and_(
            col(Proposal.state).in_(PENDING),
            col(Proposal.delivery_terminal).is_(False),
            col(Proposal.next_attempt_at) <= now,
        ),
        and_(
            col(Proposal.state) == ProposalState.APPLYING.value,
            col(Proposal.lease_expires_at) <= now,
        ),
    )


def target_not_paused() -> Any:
    """The proposal's target is not paused. A paused target's proposals wait: not claimed,
    not taken over after a lapsed lease, not enqueued by the sweep (an attempt already in
    flight when the pause commits still records its outcome)."""
    return ~exists().where(
        col(Target.id) == col(Proposal.target_id), col(Target.paused_at).is_not(None)
    )


def holding(lease: int) -> Any:
    """The caller still holds the delivery lease of generation ``lease``."""
    return and_(
        col(Proposal.state) == ProposalState.APPLYING.value,
        col(Proposal.delivery_lease) == lease,
    )


def leases_among(leases: Sequence[tuple[str, int]], dialect: str) -> Any:
    """The proposals whose leases are ``leases`` (``(proposal id, lease generation)``
    each), whether or not they are still held."""
    return pairs_among(
        (col(Proposal.id), col(Proposal.delivery_lease)),
        leases,
        (sa.String(), sa.Integer()),
        dialect,
    )
