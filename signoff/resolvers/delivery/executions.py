"""Executions: an agent carries out an approved action itself, exactly once.

A target without a url is executed by its agents (docs/design.md section 4.21): approval
leaves the proposal ``APPROVED``; ``begin_execution`` takes the one right (a
compare-and-set to ``EXECUTING`` with a lease; other callers get ``EXECUTION_CONSUMED``)
and ``report_execution`` records the outcome. A lease that lapses unreported makes the
outcome unknown: an incident, never a second execution (``lapse_executions``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select

from signoff.constants import (
    EXECUTION_INCIDENT_FINGERPRINT,
    EXECUTION_LEASE_DEFAULT_SECONDS,
    EXECUTION_LEASE_MAX_SECONDS,
    EXECUTION_LEASE_MIN_SECONDS,
    SWEEP_BATCH_SIZE,
)
from signoff.errors import (
    ExecutionConsumed,
    ExecutionNotHeld,
    Forbidden,
    NotExecutable,
    PayloadDigestMismatch,
    ResultSchemaInvalid,
    ResultTerminal,
    ValidationFailed,
)
from signoff.jsonvalues import validate_against
from signoff.models import Proposal, ProposalState, Target
from signoff.models.proposal import kept_result
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import PROPOSAL
from signoff.resolvers.core.occurrences import announce_occurrence, upsert_incident
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.delivery.claims import approval_refusal, approved_digests
from signoff.validation import require_range, require_text

P = ProposalState
# Once the right is taken the proposal never executes again, whatever happened next.
CONSUMED = frozenset(
    {P.EXECUTING, P.APPLIED, P.FAILED, P.EXECUTION_UNKNOWN, P.COMPENSATION_REQUIRED}
)
UNKNOWN_CODE = "EXECUTION_UNKNOWN"
FAILED_CODE = "EXECUTION_FAILED"


class ExecutionOutcome(StrEnum):
    APPLIED = "APPLIED"
    FAILED = "FAILED"


@dataclass(frozen=True)
class BeganExecution:
    """The right to execute, held until ``lease_expires_at``; ``lease`` fences the report."""

    proposal: Proposal
    lease: int


@dataclass(frozen=True)
class ReportedExecution:
    proposal: Proposal
    replayed: bool


async def begin_execution(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    proposal_id: str,
    payload_digest: str,
    lease_seconds: int | None = None,
    executor: str | None = None,
) -> BeganExecution:
    """Take the one right to execute an approved proposal (its proposer only)."""
    seconds = require_range(
        lease_seconds,
        "leaseSeconds",
        EXECUTION_LEASE_MIN_SECONDS,
        EXECUTION_LEASE_MAX_SECONDS,
        EXECUTION_LEASE_DEFAULT_SECONDS,
    )
    label = None if executor is None else require_text(executor, "executor", 1, 200)
    proposal = await require_row(work.session, Proposal, proposal_id, "No such proposal.")
    _require_proposer(viewer, proposal)
    if proposal.payload_digest != payload_digest:
        raise PayloadDigestMismatch(
            "payloadDigest is not the proposal's; read it again before executing.",
            expected=proposal.payload_digest,
        )
    now = work.now()
    await _require_executable(work, proposal, now)
    began = await PROPOSAL.move(
        work,
        lifecycles.BEGIN_EXECUTION,
        proposal.id,
        actor_id=viewer.id,
        guard=sa.and_(
            col(Proposal.payload_digest) == payload_digest,
            col(Proposal.expires_at) > now,
            col(Proposal.agent_executes).is_(True),
        ),
        values={
            "delivery_lease": col(Proposal.delivery_lease) + 1,
            "lease_expires_at": now + timedelta(seconds=seconds),
            "executed_by_id": viewer.id,
            "executor": label,
            "execution_started_at": now,
        },
        details={"payload_digest": payload_digest, "executor": label, "lease_seconds": seconds},
    )
    if began is None:
        await PROPOSAL.refuse(work, proposal.id, _refusal(now))
    await work.commit()
    return BeganExecution(proposal=began, lease=began.delivery_lease)


def _require_proposer(viewer: Viewer, proposal: Proposal) -> None:
    if viewer.id != proposal.proposed_by_id:
        raise Forbidden("Only the agent that proposed an action executes it.")


async def _require_executable(work: UnitOfWork, proposal: Proposal, now: datetime) -> None:
    _refusal(now)(proposal)  # raises what a state that is not APPROVED means
    approved = (await approved_digests(work, [proposal.id])).get(proposal.id)
    code = approval_refusal(now, proposal, approved)
    if code is not None:
        raise NotExecutable(_WHY[code], state=P.APPROVED, reason=code)


_WHY = {
    "ACTION_EXPIRED": "The proposal's deadline has passed; it may no longer be executed.",
    "APPROVAL_DIGEST_MISMATCH": "The proposal as stored is not the one its reviewers "
    "approved; it may not be executed.",
}


def _refusal(now: datetime) -> Callable[[Proposal], Exception]:
    """The refusal a proposal in its current state gives a ``beginExecution``: raised
    directly when it is not ``APPROVED``, returned for a lost race."""

    def explain(current: Proposal) -> Exception:
        state = ProposalState(current.state)
        if not current.agent_executes:
            raise NotExecutable(
                "Signoff delivers this target's approved actions itself; the agent does not "
                "execute them.",
                state=state,
                reason="DELIVERED_BY_SIGNOFF",
            )
        if state in CONSUMED:
            raise consumed(current)
        if state != P.APPROVED:
            raise NotExecutable(
                f"The proposal is {state}; only an approved proposal may be executed.",
                state=state,
                reason="NOT_APPROVED",
            )
        if current.expires_at <= now:
            raise NotExecutable(_WHY["ACTION_EXPIRED"], state=state, reason="ACTION_EXPIRED")
        return NotExecutable("The proposal changed meanwhile; read it again.", state=state)

    return explain


def consumed(proposal: Proposal) -> ExecutionConsumed:
    """``EXECUTION_CONSUMED``, naming who holds (or held) the right and how it went."""
    state = ProposalState(proposal.state)
    who = proposal.executor or proposal.executed_by_id
    started = proposal.execution_started_at
    return ExecutionConsumed(
        f"This approval was already used: {who} began executing it"
        + (f" at {started:%Y-%m-%d %H:%M:%S} UTC" if started else "")
        + f", and it is {state}. An approval authorises one execution.",
        state=state,
        executedById=proposal.executed_by_id,
        executor=proposal.executor,
        executionStartedAt=None if started is None else started.isoformat(),
        leaseExpiresAt=None
        if proposal.lease_expires_at is None
        else proposal.lease_expires_at.isoformat(),
    )


async def report_execution(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    proposal_id: str,
    lease: int,
    outcome: ExecutionOutcome,
    result: Any = None,
    error_code: str | None = None,
) -> ReportedExecution:
    """Record how the execution the caller holds went: ``APPLIED`` (with its result,
    checked against the target's output schema) or ``FAILED``."""
    code = None if error_code is None else require_text(error_code, "errorCode", 1, 64)
    if outcome is ExecutionOutcome.FAILED and result is not None:
        raise ValidationFailed("A failed execution reports no result.", field="result")
    proposal = await require_row(work.session, Proposal, proposal_id, "No such proposal.")
    _require_proposer(viewer, proposal)
    replayed = _replay(proposal, lease, outcome)
    if replayed is not None:
        return replayed
    target = await work.session.get(Target, proposal.target_id)
    assert target is not None
    if outcome is ExecutionOutcome.APPLIED and target.output_schema is not None:
        validate_against(result, target.output_schema, ResultSchemaInvalid, "The result")
    late = proposal.state == P.EXECUTION_UNKNOWN
    reported = await PROPOSAL.move(
        work,
        lifecycles.REPORT_EXECUTION,
        proposal.id,
        actor_id=viewer.id,
        guard=col(Proposal.delivery_lease) == lease,
        values=_reported_values(work, outcome, result, code),
        details={"lease": lease, "executor": proposal.executor, "error_code": code, "late": late},
    )
    if reported is None:
        current = await PROPOSAL.reread(work, proposal.id)
        answer = _replay(current, lease, outcome)
        if answer is None:
            raise _not_held(current)
        return answer
    await work.commit()
    return ReportedExecution(proposal=reported, replayed=False)


def _reported_values(
    work: UnitOfWork, outcome: ExecutionOutcome, result: Any, code: str | None
) -> dict[str, Any]:
    if outcome is ExecutionOutcome.APPLIED:
        return {
            "state": P.APPLIED.value,
            "applied_at": work.now(),
            "lease_expires_at": None,
            "last_error_code": None,
            "result": None if result is None else kept_result(result),
        }
    return {
        "state": P.FAILED.value,
        # Never delivered, never retried: the agent's report is the end of it.
        "delivery_terminal": True,
        "lease_expires_at": None,
        "last_error_code": code or FAILED_CODE,
    }


def _replay(proposal: Proposal, lease: int, outcome: ExecutionOutcome) -> ReportedExecution | None:
    """The answer to a report the proposal already records, ``None`` if it may still move;
    refuses a report by anyone but the holder, or one that contradicts the record."""
    state = ProposalState(proposal.state)
    if state in (P.EXECUTING, P.EXECUTION_UNKNOWN) and proposal.delivery_lease == lease:
        return None
    if proposal.delivery_lease != lease or state not in CONSUMED:
        raise _not_held(proposal)
    recorded = ExecutionOutcome.FAILED if state == P.FAILED else ExecutionOutcome.APPLIED
    if recorded is not outcome:
        raise ResultTerminal(f"The execution was already reported: {state}.", state=state)
    return ReportedExecution(proposal=proposal, replayed=True)


def _not_held(proposal: Proposal) -> ExecutionNotHeld:
    state = ProposalState(proposal.state)
    return ExecutionNotHeld(
        "You do not hold this proposal's execution: report with the lease beginExecution "
        f"gave (the proposal is {state}).",
        state=state,
    )


async def lapse_executions(work: UnitOfWork, *, limit: int = SWEEP_BATCH_SIZE) -> list[Proposal]:
    """Sweep: each execution whose lease lapsed without a report becomes
    ``EXECUTION_UNKNOWN``, with an incident for operators; returns those moved."""
    now = work.now()
    lapsed = (
        select(Proposal.id)
        .where(
            col(Proposal.state) == P.EXECUTING.value,
            col(Proposal.lease_expires_at) <= now,
        )
        .order_by(col(Proposal.lease_expires_at))
        .limit(limit)
    )
    moved: list[Proposal] = await PROPOSAL.move_where(
        work,
        lifecycles.LAPSE_EXECUTION,
        col(Proposal.id).in_(lapsed.scalar_subquery()),
        actor_id=None,
        # Re-checked in the statement: a report that committed meanwhile wins.
        guard=col(Proposal.lease_expires_at) <= now,
        values={"last_error_code": UNKNOWN_CODE},
    )
    for proposal in moved:
        await _open_incident(work, proposal)
    await work.commit()
    return moved


async def _open_incident(work: UnitOfWork, proposal: Proposal) -> None:
    who = proposal.executor or proposal.executed_by_id
    incident_id = await upsert_incident(
        work,
        fingerprint=EXECUTION_INCIDENT_FINGERPRINT.format(proposal_id=proposal.id),
        kind="execution_unknown",
        title=f"{proposal.action_code} may or may not have run: {who} did not report back",
        summary=(
            f"{who} began executing proposal {proposal.id} and its lease lapsed without a "
            "report. Signoff cannot know whether the action ran, and will not run it again: "
            "check the system it acts on, then resolve this incident."
        ),
        entity_type="proposal",
        entity_id=proposal.id,
        error_code=UNKNOWN_CODE,
    )
    assert incident_id is not None  # unconditional: inserted or counted
    await announce_occurrence(work, incident_id, error_code=UNKNOWN_CODE)
