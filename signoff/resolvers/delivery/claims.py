"""Claiming deliveries: a worker takes a batch of due deliveries in one transaction.

One claim, sized to the worker's free slots, locks the targets that may take deliveries,
shares the slots among them within their limits, moves the chosen proposals to
``APPLYING`` in one statement and runs the checks made before sending on the whole batch
(docs/design.md section 4.14, Claim).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy import and_, exists, func, not_, union_all, update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.delivery import Body
from signoff.evidence.sealing import SealingError
from signoff.models import Approval, CircuitState, Decision, Proposal, ProposalState, Target
from signoff.models.arrays import among
from signoff.models.proposal import payload_digest_of
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import PROPOSAL
from signoff.resolvers.core.target_lifecycle import PROBE, TARGET_CIRCUIT
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.delivery.due import due, due_rows, leases_among
from signoff.resolvers.delivery.outcomes import refuse_attempt, start_attempts
from signoff.resolvers.targets.circuit import accepting
from signoff.resolvers.targets.limits import Allowance, allowance, rate_available_after, share

SIGNING_SECRET_UNREADABLE = "SIGNING_SECRET_UNREADABLE"
logger = logging.getLogger("signoff.delivery")


@dataclass(frozen=True)
class Delivery:
    """A claimed delivery, ready to send: the proposal as claimed (its lease and attempt
    number), its target, the target's unsealed signing secret, and the request's body,
    built once for the started attempt's digest and the send."""

    proposal: Proposal
    target: Target
    secret: str = field(repr=False)
    body: Body
    probe: bool = False

    @property
    def lease(self) -> tuple[str, int]:
        return self.proposal.id, self.proposal.delivery_lease


@dataclass(frozen=True)
class Claim:
    """What one claim took: deliveries to send, proposals refused before sending (id to
    refusal code), and when a limit lets more go if it held some back."""

    deliveries: list[Delivery]
    refused: dict[str, str]
    retry_at: datetime | None = None


NOTHING = Claim([], {})


async def claim_deliveries(
    work: UnitOfWork,
    *,
    limit: int,
    lease_seconds: int,
    only: Sequence[str] | None = None,
    answered: Collection[tuple[str, int]] = (),
) -> Claim:
    """Claim up to ``limit`` due deliveries (of the proposals ``only`` names, if given) and
    commit; see the module's description. ``answered``: the leases ``(proposal id, lease
    generation)`` of the caller's deliveries whose requests have finished but whose
    outcomes are not yet recorded; they no longer count against their targets'
    ``maxConcurrency`` (a probe still waits for them; a lease since taken over by another
    worker is a new generation, in flight again)."""
    now = work.now()
    targets = await _claimable_targets(work, now, only)
    if not targets or limit <= 0:
        await work.rollback()
        return NOTHING
    in_flight = await _in_flight(work, targets, now, answered)
    allowances = [allowance(t, in_flight.get(t.id, 0), now) for t in targets]
    quotas = share(limit, allowances)
    retry_at = min((a.retry_at for a in allowances if a.retry_at is not None), default=None)
    if not quotas:
        await work.rollback()
        return Claim([], {}, retry_at)
    claimed = await PROPOSAL.move_where(
        work,
        lifecycles.START_ATTEMPT,
        col(Proposal.id).in_(_chosen(now, quotas, only)),
        actor_id=None,
        guard=due(now),
        values={
            "lease_expires_at": now + timedelta(seconds=lease_seconds),
            "delivery_attempt_count": col(Proposal.delivery_attempt_count) + 1,
            "delivery_lease": col(Proposal.delivery_lease) + 1,
            "accepted_at": None,
        },
        as_records=True,
    )
    await _charge(work, allowances, claimed, now, lease_seconds)
    deliveries, refused = await _checked(work, claimed, {a.target.id: a for a in allowances})
    await start_attempts(work, [(d.proposal, d.body) for d in deliveries])
    await work.commit()
    return Claim(deliveries, refused, retry_at)


async def claim_delivery(
    work: UnitOfWork, proposal_id: str, *, lease_seconds: int
) -> Proposal | None:
    """Claim one proposal if it is due (and its target's limits allow); ``None`` if not.
    A proposal that fails a check before sending is refused, and ``None`` returned."""
    claim = await claim_deliveries(work, limit=1, lease_seconds=lease_seconds, only=[proposal_id])
    return claim.deliveries[0].proposal if claim.deliveries else None


async def _claimable_targets(
    work: UnitOfWork, now: datetime, only: Sequence[str] | None
) -> list[Target]:
    has_due = exists().where(col(Proposal.target_id) == col(Target.id), due_rows(now))
    if only is not None:
        has_due = has_due.where(col(Proposal.id).in_(only))
    stmt = (
        select(Target)
        .where(col(Target.paused_at).is_(None), accepting(now), has_due)
        .order_by(col(Target.id))
        .execution_options(populate_existing=True)
    )
    if _dialect(work) == "postgresql":
        stmt = stmt.with_for_update(skip_locked=True)
    return list((await work.session.exec(stmt)).all())


async def _in_flight(
    work: UnitOfWork,
    targets: Sequence[Target],
    now: datetime,
    answered: Collection[tuple[str, int]],
) -> dict[str, int]:
    """Deliveries in flight per target: claimed, lease live, not waiting after a 202, and
    not ``answered`` (their requests have finished), except for a target whose circuit is
    open or half-open: its probe waits for every outcome to be recorded."""
    counted: Any = func.count()
    if answered:
        closed = [t.id for t in targets if t.circuit_state == CircuitState.CLOSED.value]
        finished = and_(
            leases_among(list(answered), _dialect(work)),
            col(Proposal.target_id).in_(closed),
        )
        counted = func.count().filter(not_(finished))
    stmt = (
        select(Proposal.target_id, counted)
        .where(
            col(Proposal.target_id).in_([t.id for t in targets]),
            col(Proposal.state) == ProposalState.APPLYING.value,
            col(Proposal.lease_expires_at) > now,
            col(Proposal.accepted_at).is_(None),
        )
        .group_by(col(Proposal.target_id))
    )
    return {target_id: count for target_id, count in (await work.session.exec(stmt)).all()}


def _chosen(now: datetime, quotas: dict[str, int], only: Sequence[str] | None) -> Any:
    """The ids to claim: each target's oldest due proposals, up to its quota."""
    parts = []
    for target_id, quota in quotas.items():
        part = select(Proposal.id).where(col(Proposal.target_id) == target_id, due_rows(now))
        if only is not None:
            part = part.where(col(Proposal.id).in_(only))
        part = part.order_by(col(Proposal.next_attempt_at), col(Proposal.id)).limit(quota)
        parts.append(part)
    if len(parts) == 1:
        return parts[0]
    return union_all(*(select(part.subquery().c.id) for part in parts))


async def _charge(
    work: UnitOfWork,
    allowances: Sequence[Allowance],
    claimed: Sequence[Proposal],
    now: datetime,
    lease_seconds: int,
) -> None:
    """Spend the targets' rate allowance, one statement per target that needs it. A probe
    is the circuit's move to ``HALF_OPEN`` (until its lease would lapse, so a probe whose
    worker died is followed by another), made by the same statement; the claim holds the
    target's row, so the move cannot miss."""
    taken: dict[str, int] = {}
    for proposal in claimed:
        taken[proposal.target_id] = taken.get(proposal.target_id, 0) + 1
    for entry in allowances:
        count = taken.get(entry.target.id, 0)
        values: dict[str, Any] = {}
        if count and entry.target.rate_per_second is not None:
            values["rate_available_at"] = rate_available_after(entry.target, count, now)
        if count and entry.probe:
            values["circuit_probe_at"] = now + timedelta(seconds=lease_seconds)
            await TARGET_CIRCUIT.move(work, PROBE, entry.target.id, actor_id=None, values=values)
        elif values:
            await work.session.exec(
                update(Target).where(col(Target.id) == entry.target.id).values(**values)
            )


async def _checked(
    work: UnitOfWork, claimed: Sequence[Proposal], allowances: dict[str, Allowance]
) -> tuple[list[Delivery], dict[str, str]]:
    """The checks before sending, for the whole batch; refuses those that fail."""
    approved = await approved_digests(work, [p.id for p in claimed])
    secrets = _secrets(work, [allowances[t].target for t in {p.target_id for p in claimed}])
    deliveries: list[Delivery] = []
    refused: dict[str, str] = {}
    for proposal in claimed:
        entry = allowances[proposal.target_id]
        secret = secrets.get(entry.target.id)
        code = refusal_before_send(work.now(), proposal, entry.target, approved.get(proposal.id))
        if code is None and secret is None:
            code = SIGNING_SECRET_UNREADABLE
        if code is not None:
            await refuse_attempt(work, proposal, code)
            refused[proposal.id] = code
        else:
            body = Body.of(proposal)
            deliveries.append(Delivery(proposal, entry.target, secret or "", body, entry.probe))
    return deliveries, refused


def refusal_before_send(
    now: datetime, proposal: Proposal, target: Target, approved: list[str] | None
) -> str | None:
    """Why this attempt must not be sent, or ``None``: re-checked at every attempt, because
    what reaches the target must be exactly what was approved, while it is still valid."""
    if proposal.delivery_attempt_count > target.max_attempts:
        return "ATTEMPTS_EXHAUSTED"
    return approval_refusal(now, proposal, approved)


def approval_refusal(now: datetime, proposal: Proposal, approved: list[str] | None) -> str | None:
    """Why the proposal as stored is not the one its reviewers approved, or past its
    deadline; ``None`` if it may be carried out (delivered, or executed by its agent)."""
    if proposal.expires_at <= now:
        return "ACTION_EXPIRED"
    if payload_digest_of(proposal) != proposal.payload_digest or proposal.awaiting_proposer:
        return "APPROVAL_DIGEST_MISMATCH"
    digests = approved or []
    if (
        any(d != proposal.payload_digest for d in digests)
        or len(digests) < proposal.required_approvals
    ):
        return "APPROVAL_DIGEST_MISMATCH"
    return None


async def approved_digests(work: UnitOfWork, proposal_ids: list[str]) -> dict[str, list[str]]:
    """The digests approved of each proposal's current revision (an amendment voids the
    approvals of earlier ones)."""
    if not proposal_ids:
        return {}
    rows = await work.session.exec(
        select(Approval.proposal_id, Approval.payload_digest)
        .join(Proposal, col(Proposal.id) == col(Approval.proposal_id))
        .where(
            among(col(Approval.proposal_id), proposal_ids, sa.String(), _dialect(work)),
            col(Approval.decision) == Decision.APPROVED.value,
            col(Approval.revision) == col(Proposal.revision),
        )
    )
    digests: dict[str, list[str]] = {}
    for proposal_id, digest in rows.all():
        digests.setdefault(proposal_id, []).append(digest)
    return digests


def _secrets(work: UnitOfWork, targets: list[Target]) -> dict[str, str]:
    """Each target's signing secret, unsealed once per claim; a secret that does not open
    (another ``SIGNOFF_SECRET_KEY``) is left out, and its deliveries are refused."""
    opened: dict[str, str] = {}
    for target in targets:
        try:
            opened[target.id] = work.sealer.open(target.signing_secret)
        except SealingError:
            # A configuration fault, not the receiver's: end in an incident an operator sees.
            logger.error(
                "delivery target=%s: the target's signing secret does not open with this "
                "process's SIGNOFF_SECRET_KEY",
                target.id,
            )
    return opened


async def renew_leases(
    work: UnitOfWork, leases: Sequence[tuple[str, int]], *, lease_seconds: int
) -> set[str]:
    """Extend the leases still held (each ``(proposal id, lease generation)``) while their
    requests are in flight, in one statement; returns the ids renewed."""
    if not leases:
        return set()
    renewed = await PROPOSAL.move_where(
        work,
        lifecycles.RENEW_LEASE,
        leases_among(leases, _dialect(work)),
        actor_id=None,
        values={"lease_expires_at": work.now() + timedelta(seconds=lease_seconds)},
    )
    await work.commit()
    return {row.id for row in renewed}


async def renew_lease(
    work: UnitOfWork, proposal_id: str, lease: int, *, lease_seconds: int
) -> bool:
    """``renew_leases`` for one lease."""
    return bool(await renew_leases(work, [(proposal_id, lease)], lease_seconds=lease_seconds))


async def any_claimable(session: AsyncSession, now: datetime) -> bool:
    """Whether a claim now would find anything (a read: an idle worker's poll never takes
    SQLite's write lock)."""
    targets = select(Target.id).where(col(Target.paused_at).is_(None), accepting(now))
    stmt = select(exists().where(due_rows(now), col(Proposal.target_id).in_(targets)))
    return bool((await session.exec(stmt)).one())


def _dialect(work: UnitOfWork) -> str:
    bind = work.session.bind
    assert bind is not None
    return bind.dialect.name
