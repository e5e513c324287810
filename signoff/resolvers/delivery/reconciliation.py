"""Reconciliation: one periodic pass that puts right what dead workers, lapsed claims and
lost messages left behind (docs/design.md section 6.6).

Each repair is one short transaction: a move of the transition core and the
``RepairAction`` naming exactly what it repaired, so two runs at once never repair one
thing twice. No transaction is held across the network.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import and_
from sqlmodel import col, select

from signoff.constants import (
    ESCALATE_PROPOSAL_KEY,
    EXPIRE_PROPOSAL_KEY,
    LAPSE_CLAIM_KEY,
    REJECT_PROPOSAL_KEY,
    RELEASE_LEASE_KEY,
    SWEEP_BATCH_SIZE,
)
from signoff.errors import SignoffError
from signoff.models import (
    DeadlineAction,
    HumanTask,
    Proposal,
    ProposalState,
    ReconciliationRun,
    ReconciliationState,
    RepairAction,
    TaskState,
)
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import PROPOSAL, RECONCILIATION, TASK
from signoff.resolvers.core.work import UnitOfWork, WorkMaker
from signoff.resolvers.delivery.due import holding
from signoff.resolvers.incidents.audit_log import Disagreement, check_audit_log
from signoff.resolvers.reach.deadlines import apply_deadline, lapsed_proposals

logger = logging.getLogger("signoff.reconciliation")

C = TypeVar("C")


@dataclass(frozen=True)
class Repair:
    """What one repair changed: the ``RepairAction`` written in its transaction."""

    action_type: str
    entity_type: str
    entity_id: str
    operation_key: str
    before: dict[str, Any]
    after: dict[str, Any]


@dataclass
class Tally:
    """What a run found and did so far."""

    scanned: int = 0
    repaired: int = 0
    failed: int = 0
    republished: int = 0
    error_codes: list[str] = field(default_factory=list)
    by_type: Counter[str] = field(default_factory=Counter)  # repairs made, by action type

    def failure(self, what: str, exc: Exception) -> None:
        code = exc.code if isinstance(exc, SignoffError) else type(exc).__name__
        logger.warning("reconciliation: %s failed: %s", what, code)
        self.failed += 1
        self.error_codes.append(code[:64])


@dataclass(frozen=True)
class Reconciliation:
    """A finished run, and how many change events it had republished (those are the
    relay's to track: they get no ``RepairAction`` and are not in ``repaired_count``)."""

    run: ReconciliationRun
    republished: int
    repairs_by_type: dict[str, int] = field(default_factory=dict)
    # Where the audit log disagreed with its latest checkpoint (a CRITICAL incident is open).
    audit_log: Disagreement | None = None


@dataclass(frozen=True)
class LapsedLease:
    proposal_id: str
    lease: int
    lease_expires_at: datetime
    attempt: int

    def __str__(self) -> str:
        return f"proposal {self.proposal_id}"


@dataclass(frozen=True)
class LapsedClaim:
    task_id: str
    version: int
    assignee_id: str | None
    claim_expires_at: datetime

    def __str__(self) -> str:
        return f"task {self.task_id}"


async def reconcile(make: WorkMaker, *, limit: int = SWEEP_BATCH_SIZE) -> Reconciliation:
    """One run: release lapsed delivery leases, lapse expired task claims, expire lapsed
    approvals, republish unpublished change events, and check the audit log against its
    latest checkpoint (a disagreement opens a CRITICAL incident)."""
    run_id = await start_run(make)
    tally = Tally()
    audit_log: Disagreement | None = None
    try:
        await _repair_each(make, run_id, tally, await lapsed_leases(make, limit=limit), release)
        await _repair_each(make, run_id, tally, await lapsed_claims(make, limit=limit), lapse)
        async with make() as work:
            approvals = [p.id for p in await lapsed_proposals(work, limit=limit)]
            await work.rollback()
        await _repair_each(make, run_id, tally, approvals, apply_approval_deadline)
        tally.republished = await republish(make)
        audit_log = await check_audit_log(make)
    except Exception as exc:  # a scan failed: the run stops, what it repaired stays repaired
        tally.failure("run", exc)
    run = await finish_run(make, run_id, tally)
    return Reconciliation(run, tally.republished, dict(tally.by_type), audit_log)


async def start_run(make: WorkMaker) -> str:
    """Record that a run began (``RUNNING``), in a transaction of its own."""
    async with make() as work:
        run = ReconciliationRun(started_at=work.now())
        work.session.add(run)
        await work.commit()
        return run.id


async def finish_run(make: WorkMaker, run_id: str, tally: Tally) -> ReconciliationRun:
    """Move the run to SUCCEEDED, PARTIAL (some repairs failed, some were made) or FAILED."""
    if not tally.failed:
        state = ReconciliationState.SUCCEEDED
    elif tally.repaired:
        state = ReconciliationState.PARTIAL
    else:
        state = ReconciliationState.FAILED
    async with make() as work:
        finished = await RECONCILIATION.move(
            work,
            lifecycles.FINISH_RUN,
            run_id,
            actor_id=None,
            values={
                "state": state.value,
                "scanned_count": tally.scanned,
                "repaired_count": tally.repaired,
                "error_code": tally.error_codes[0] if tally.error_codes else None,
                "finished_at": work.now(),
            },
        )
        await work.commit()
    assert finished is not None  # only this run finishes itself
    return finished


async def _repair_each(
    make: WorkMaker,
    run_id: str,
    tally: Tally,
    candidates: Sequence[C],
    repair: Callable[[UnitOfWork, C, str], Awaitable[Repair | None]],
) -> None:
    """Repair each candidate in a transaction of its own, with its ``RepairAction``; a
    candidate someone else repaired meanwhile matches nothing and writes nothing."""
    tally.scanned += len(candidates)
    for candidate in candidates:
        async with make() as work:
            try:
                done = await repair(work, candidate, run_id)
                if done is None:
                    await work.rollback()
                    continue
                work.session.add(
                    RepairAction(
                        reconciliation_run_id=run_id,
                        action_type=done.action_type,
                        entity_type=done.entity_type,
                        entity_id=done.entity_id,
                        operation_key=done.operation_key,
                        before=done.before,
                        after=done.after,
                        created_at=work.now(),
                    )
                )
                await work.commit()
            except Exception as exc:
                with contextlib.suppress(Exception):
                    await work.rollback()
                tally.failure(f"{repair.__name__} {candidate}", exc)
                continue
        tally.repaired += 1
        tally.by_type[done.action_type] += 1


# --- delivery leases ---------------------------------------------------------------


async def lapsed_leases(make: WorkMaker, *, limit: int) -> list[LapsedLease]:
    """Proposals in flight whose lease lapsed: their worker died or lost the database."""
    async with make() as work:
        stmt = (
            select(
                Proposal.id,
                Proposal.delivery_lease,
                Proposal.lease_expires_at,
                Proposal.delivery_attempt_count,
            )
            .where(
                col(Proposal.state) == ProposalState.APPLYING.value,
                col(Proposal.lease_expires_at) <= work.now(),
            )
            .order_by(col(Proposal.lease_expires_at))
            .limit(limit)
        )
        rows = list((await work.session.exec(stmt)).all())
        await work.rollback()
    return [LapsedLease(id_, lease, at, attempt) for id_, lease, at, attempt in rows if at]


async def release(work: UnitOfWork, lapsed: LapsedLease, run_id: str) -> Repair | None:
    """Back to pending, due now, so delivery resumes; the lease generation is kept, so the
    worker that held it can never settle the proposal afterwards."""
    now = work.now()
    key = RELEASE_LEASE_KEY.format(proposal_id=lapsed.proposal_id, lease=lapsed.lease)
    released = await PROPOSAL.move(
        work,
        lifecycles.RELEASE_LEASE,
        lapsed.proposal_id,
        actor_id=None,
        guard=and_(holding(lapsed.lease), col(Proposal.lease_expires_at) <= now),
        values={"next_attempt_at": now, "lease_expires_at": None},
        details={"operation_key": key, "reconciliation_run_id": run_id},
    )
    if released is None:
        return None
    return Repair(
        action_type="release_lease",
        entity_type="proposal",
        entity_id=lapsed.proposal_id,
        operation_key=key,
        before={
            "state": ProposalState.APPLYING.value,
            "deliveryLease": lapsed.lease,
            "leaseExpiresAt": lapsed.lease_expires_at.isoformat(),
            "deliveryAttemptCount": lapsed.attempt,
        },
        after={"state": str(released.state), "nextAttemptAt": now.isoformat()},
    )


# --- task claims -------------------------------------------------------------------


async def lapsed_claims(make: WorkMaker, *, limit: int) -> list[LapsedClaim]:
    """Claimed tasks whose claim lapsed: read as OPEN already, still stored as CLAIMED."""
    async with make() as work:
        stmt = (
            select(
                HumanTask.id, HumanTask.version, HumanTask.assignee_id, HumanTask.claim_expires_at
            )
            .where(
                col(HumanTask.state) == TaskState.CLAIMED.value,
                col(HumanTask.claim_expires_at) <= work.now(),
            )
            .order_by(col(HumanTask.claim_expires_at))
            .limit(limit)
        )
        rows = list((await work.session.exec(stmt)).all())
        await work.rollback()
    return [LapsedClaim(id_, version, who, at) for id_, version, who, at in rows if at]


async def lapse(work: UnitOfWork, lapsed: LapsedClaim, run_id: str) -> Repair | None:
    """Write back the OPEN state that reads derive, and announce it; only if the task is
    still exactly as scanned (its version), so a claim taken meanwhile stays."""
    key = LAPSE_CLAIM_KEY.format(task_id=lapsed.task_id, version=lapsed.version)
    opened = await TASK.move(
        work,
        lifecycles.LAPSE_CLAIM,
        lapsed.task_id,
        actor_id=None,
        guard=and_(
            col(HumanTask.version) == lapsed.version,
            col(HumanTask.claim_expires_at) <= work.now(),
        ),
        values={"assignee_id": None, "claim_expires_at": None},
        details={
            "operation_key": key,
            "reconciliation_run_id": run_id,
            "lapsed_claim_of": lapsed.assignee_id,
        },
    )
    if opened is None:
        return None
    return Repair(
        action_type="lapse_claim",
        entity_type="task",
        entity_id=lapsed.task_id,
        operation_key=key,
        before={
            "state": TaskState.CLAIMED.value,
            "assigneeId": lapsed.assignee_id,
            "claimExpiresAt": lapsed.claim_expires_at.isoformat(),
            "version": lapsed.version,
        },
        after={"state": str(opened.state), "assigneeId": None, "version": opened.version},
    )


# --- approvals past their deadline -------------------------------------------------


async def apply_approval_deadline(work: UnitOfWork, proposal_id: str, run_id: str) -> Repair | None:
    """Rows P7, P11 or P12 with their task's row, by the proposal's deadline policy, as the
    sweep applies them; each step is made once, so the proposal id (and escalation level)
    is the key."""
    proposal = await work.session.get(Proposal, proposal_id, populate_existing=True)
    if proposal is None or proposal.state != ProposalState.APPROVAL_REQUIRED:
        return None
    before = {
        "state": ProposalState.APPROVAL_REQUIRED.value,
        "expiresAt": proposal.expires_at.isoformat(),
        "queueId": proposal.queue_id,
        "escalationLevel": proposal.escalation_level,
    }
    done = await apply_deadline(work, proposal)
    if done is None:
        return None
    moved = await work.session.get(Proposal, proposal_id, populate_existing=True)
    assert moved is not None
    task = (
        await work.session.exec(select(HumanTask).where(HumanTask.proposal_id == proposal_id))
    ).first()
    after: dict[str, Any] = {"state": str(moved.state)}
    if done is DeadlineAction.ESCALATE:
        after |= {
            "queueId": moved.queue_id,
            "escalationLevel": moved.escalation_level,
            "expiresAt": moved.expires_at.isoformat(),
        }
    else:
        after["expiredTaskIds"] = [] if task is None else [task.id]
    action_type, key = DEADLINE_REPAIRS[done]
    return Repair(
        action_type=action_type,
        entity_type="proposal",
        entity_id=proposal_id,
        operation_key=key.format(proposal_id=proposal_id, level=moved.escalation_level),
        before=before,
        after=after,
    )


DEADLINE_REPAIRS = {
    DeadlineAction.EXPIRE: ("expire_proposal", EXPIRE_PROPOSAL_KEY),
    DeadlineAction.REJECT: ("reject_proposal", REJECT_PROPOSAL_KEY),
    DeadlineAction.ESCALATE: ("escalate_proposal", ESCALATE_PROPOSAL_KEY),
}


# --- change events -----------------------------------------------------------------


async def republish(make: WorkMaker) -> int:
    """Have this process's event relay republish events whose publish never happened."""
    events = make.services.events
    return 0 if events is None else await events.relay()
