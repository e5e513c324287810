"""Delivery outcomes: recording what attempts came to, in batches.

Every change is a transition of the proposal's delivery (``lifecycles.PROPOSAL``), a
compare-and-set: an outcome is recorded only by the worker that still holds the lease
it claimed (``state = 'APPLYING'`` and the lease generation it was given), so a worker
whose lease lapsed cannot overwrite the work of the one that took over, in this retry
cycle or any later one. An applied attempt with a result (its target's output schema)
stores it on the proposal. Claims are in ``signoff.resolvers.delivery.claims``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy import tuple_
from sqlmodel import col

from signoff.constants import DELIVERY_ACCEPTED_WAIT_SECONDS
from signoff.delivery import AttemptOutcome, Body, Jitter, backoff_seconds
from signoff.models import DeliveryAttempt, Proposal, ProposalState, ResponseClass, Target
from signoff.models.arrays import array_parameter
from signoff.models.base import new_id, new_ids
from signoff.models.inserts import insert_rows
from signoff.models.proposal import kept_result
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import PROPOSAL
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.delivery.due import holding, leases_among
from signoff.resolvers.incidents.incidents import record_delivery_dead_letter
from signoff.resolvers.targets.circuit import note_attempts
from signoff.resolvers.targets.health import FAILED_CLASSES, judge_target_health


async def refuse_attempt(work: UnitOfWork, proposal: Proposal, error_code: str) -> None:
    """End delivery without sending: the claimed attempt failed a check before it was sent."""
    await fail_terminally(
        work, proposal.id, holding(proposal.delivery_lease), error_code, edge=lifecycles.REFUSE
    )


ATTEMPTS: sa.Table = DeliveryAttempt.__table__  # type: ignore[attr-defined]
_SETTLED_COLUMNS = (
    "response_class",
    "status_code",
    "error_code",
    "request_digest",
    "response_digest",
    "duration_ms",
    "started_at",
    "finished_at",
)
# What settling started attempts writes. On PostgreSQL one statement for the batch, its
# rows as arrays (``unnest``): the text and the parameters' number do not change with
# the batch, where an executemany sent a statement per attempt.
_SETTLED = (
    sa.func.unnest(
        *(
            array_parameter(f"a_{name}", ATTEMPTS.c[name].type)
            for name in ("proposal_id", "lease", *_SETTLED_COLUMNS)
        )
    )
    .table_valued("proposal_id", "lease", *_SETTLED_COLUMNS)
    .render_derived(name="settled_rows")
)
_SETTLE_ARRAYS = (
    sa.update(ATTEMPTS)
    .where(
        ATTEMPTS.c.proposal_id == _SETTLED.c.proposal_id,
        ATTEMPTS.c.lease == _SETTLED.c.lease,
    )
    .values({name: _SETTLED.c[name] for name in _SETTLED_COLUMNS})
    .returning(ATTEMPTS.c.proposal_id, ATTEMPTS.c.lease)
)
# Elsewhere (SQLite, in process) one row of an executemany per attempt.
_SETTLE = (
    sa.update(ATTEMPTS)
    .where(
        ATTEMPTS.c.proposal_id == sa.bindparam("b_proposal_id"),
        ATTEMPTS.c.lease == sa.bindparam("b_lease"),
    )
    .values({name: sa.bindparam(f"b_{name}") for name in _SETTLED_COLUMNS})
)


async def start_attempts(work: UnitOfWork, claimed: Sequence[tuple[Proposal, Body]]) -> None:
    """Record each claimed attempt before its request is sent, in the claim's transaction:
    ``UNKNOWN`` until its worker settles it (``record_outcomes``), with the digest of the
    body it sends. A worker killed in between leaves it so:
    the attempt may have reached the receiver, and the history says it was made, with the
    proposal's ``webhook-id``."""
    if not claimed:
        return
    now = work.now()
    # Every column given, so the batch goes in as one statement of a fixed text
    # (``insert_rows``) rather than a multi-row text converted anew per claim.
    ids = new_ids(len(claimed))
    rows = [
        {
            "id": id_,
            "proposal_id": proposal.id,
            "attempt_number": proposal.delivery_attempt_count,
            "response_class": ResponseClass.UNKNOWN.value,
            "status_code": None,
            "error_code": None,
            "request_digest": body.digest,
            "response_digest": None,
            "duration_ms": None,
            "started_at": now,
            "finished_at": None,
            "lease": proposal.delivery_lease,
        }
        for id_, (proposal, body) in zip(ids, claimed, strict=True)
    ]
    await insert_rows(await work.session.connection(), [(ATTEMPTS, rows)])


@dataclass(frozen=True)
class Attempted:
    """One attempt to record: the proposal as its worker claimed it (its lease), its
    target, and what the attempt came to."""

    proposal: Proposal
    target: Target
    outcome: AttemptOutcome


async def record_outcome(
    work: UnitOfWork,
    proposal: Proposal,
    target: Target,
    outcome: AttemptOutcome,
    *,
    jitter: Jitter | None = None,
) -> ProposalState | None:
    """``record_outcomes`` for one attempt."""
    (state,) = await record_outcomes(work, [Attempted(proposal, target, outcome)], jitter=jitter)
    return state


async def record_outcomes(
    work: UnitOfWork, attempts: Sequence[Attempted], *, jitter: Jitter | None = None
) -> list[ProposalState | None]:
    """Store a batch of attempts and move each proposal by its response class, in one
    transaction; returns each one's new state, or ``None`` where its worker no longer held
    the lease (the attempt is still stored). Applied attempts without a result, the common
    case, move in one statement; those with one, each writing its own, one by one like the
    rest. The attempts' rows and change events are inserted in batches."""
    await _settle_attempts(work, attempts)
    moved = await _apply_all(work, [a for a in attempts if _applied_alike(a)])
    for attempt in attempts:
        if not _applied_alike(attempt):
            moved[attempt.proposal.id] = await _settle(
                work, attempt.proposal, attempt.target, attempt.outcome, jitter
            )
    await _judge_targets(work, attempts)
    await work.commit()
    return [
        None if (row := moved.get(a.proposal.id)) is None else ProposalState(row.state)
        for a in attempts
    ]


def _applied_alike(attempt: Attempted) -> bool:
    """Applied with nothing of its own to write: it shares the batch's values."""
    outcome = attempt.outcome
    return outcome.response_class is ResponseClass.APPLIED and outcome.result is None


async def _settle_attempts(work: UnitOfWork, attempts: Sequence[Attempted]) -> None:
    """Write each attempt's outcome over the row its claim started (found by its lease),
    whether or not its worker still holds the lease; an attempt with no started row (one
    claimed before attempts were started at their claim) is inserted whole."""
    connection = await work.session.connection()
    keys = [(a.proposal.id, a.proposal.delivery_lease) for a in attempts]
    if connection.dialect.name == "postgresql":
        # The update says which rows it found: no look beforehand.
        rows = [_settled_row(a) for a in attempts]
        arrays = {f"a_{key[2:]}": [row[key] for row in rows] for key in rows[0]}
        started = set((await connection.execute(_SETTLE_ARRAYS, arrays)).all())
    else:
        started = set(
            (
                await connection.execute(
                    sa.select(ATTEMPTS.c.proposal_id, ATTEMPTS.c.lease).where(
                        tuple_(ATTEMPTS.c.proposal_id, ATTEMPTS.c.lease).in_(keys)
                    )
                )
            ).all()
        )
        settled = [_settled_row(a) for a, key in zip(attempts, keys, strict=True) if key in started]
        if settled:
            await connection.execute(_SETTLE, settled)
    whole = [_attempt_row(a) for a, key in zip(attempts, keys, strict=True) if key not in started]
    if whole:
        await connection.execute(sa.insert(ATTEMPTS), whole)


def _settled_row(attempt: Attempted) -> dict[str, Any]:
    """What ``_SETTLE`` writes over a started row: the outcome's columns, named ``b_…``
    (no id minted for a row that has one)."""
    proposal, outcome = attempt.proposal, attempt.outcome
    return {
        "b_proposal_id": proposal.id,
        "b_response_class": outcome.response_class.value,
        "b_status_code": outcome.status_code,
        "b_error_code": outcome.error_code,
        "b_request_digest": outcome.request_digest,
        "b_response_digest": outcome.response_digest,
        "b_duration_ms": outcome.duration_ms,
        "b_started_at": outcome.started_at,
        "b_finished_at": outcome.finished_at,
        "b_lease": proposal.delivery_lease,
    }


def _attempt_row(attempt: Attempted) -> dict[str, Any]:
    row = {key[2:]: value for key, value in _settled_row(attempt).items()}
    return {
        **row,
        "id": new_id(),
        "attempt_number": attempt.proposal.delivery_attempt_count,
    }


async def _apply_all(work: UnitOfWork, attempts: Sequence[Attempted]) -> dict[str, Proposal | None]:
    """docs/design.md section 4.6, row D4 for a batch: each fenced by its own lease."""
    if not attempts:
        return {}
    leases = [(a.proposal.id, a.proposal.delivery_lease) for a in attempts]
    applied = await PROPOSAL.move_where(
        work,
        lifecycles.APPLY,
        leases_among(leases, work.session.get_bind().dialect.name),
        actor_id=None,
        guard=col(Proposal.state) == ProposalState.APPLYING.value,
        values=_applied_values(work),
        as_records=True,
    )
    return {row.id: row for row in applied}


async def _judge_targets(work: UnitOfWork, attempts: Sequence[Attempted]) -> None:
    """Once per target in the batch: its circuit, and its failure rate after a failure."""
    by_target: dict[str, list[Attempted]] = {}
    for attempt in sorted(attempts, key=lambda a: a.outcome.finished_at):
        by_target.setdefault(attempt.target.id, []).append(attempt)
    for target_id, batch in by_target.items():
        await note_attempts(work, target_id, [a.outcome for a in batch])
        failed = [a for a in batch if a.outcome.response_class in FAILED_CLASSES]
        if failed:
            await judge_target_health(work, failed[-1].target, failed[-1].outcome)


async def _settle(
    work: UnitOfWork,
    proposal: Proposal,
    target: Target,
    outcome: AttemptOutcome,
    jitter: Jitter | None,
) -> Proposal | None:
    """docs/design.md section 4.6, rows D4-D7: applied, accepted (202), retrying, or failed."""
    now, held, attempt = (
        work.now(),
        holding(proposal.delivery_lease),
        proposal.delivery_attempt_count,
    )
    if outcome.response_class is ResponseClass.APPLIED:
        return await mark_applied(work, proposal.id, held, result=outcome.result)
    if outcome.response_class is ResponseClass.ACCEPTED:
        wait = timedelta(seconds=DELIVERY_ACCEPTED_WAIT_SECONDS)
        return await PROPOSAL.move(
            work,
            lifecycles.ACCEPT,
            proposal.id,
            actor_id=None,
            guard=held,
            values={"accepted_at": now, "lease_expires_at": now + wait, "last_error_code": None},
        )
    code = outcome.error_code or "ATTEMPTS_EXHAUSTED"
    if outcome.response_class is ResponseClass.RETRYABLE and attempt < target.max_attempts:
        delay = outcome.retry_after_seconds
        if delay is None:
            delay = backoff_seconds(attempt, jitter)
        return await schedule_retry(work, proposal.id, held, code, now + timedelta(seconds=delay))
    return await fail_terminally(work, proposal.id, held, code, status_code=outcome.status_code)


async def mark_applied(
    work: UnitOfWork,
    proposal_id: str,
    guard: Any,
    actor_id: str | None = None,
    *,
    result: Any = None,
    **details: Any,
) -> Proposal | None:
    """Row D5 or D8; ``result`` (the receiver's answer, when its target keeps one) is
    stored with it. Without one the column is left as it is: null, as a proposal is
    applied only once."""
    applied = await PROPOSAL.move(
        work,
        lifecycles.APPLY,
        proposal_id,
        actor_id=actor_id,
        guard=guard,
        values=_applied_values(work, result),
        details=details,
    )
    return applied


def _applied_values(work: UnitOfWork, result: Any = None) -> dict[str, Any]:
    values: dict[str, Any] = {
        "applied_at": work.now(),
        "lease_expires_at": None,
        "next_attempt_at": None,
        "last_error_code": None,
    }
    if result is not None:
        values["result"] = kept_result(result)
    return values


async def schedule_retry(
    work: UnitOfWork,
    proposal_id: str,
    guard: Any,
    error_code: str,
    at: datetime,
    actor_id: str | None = None,
) -> Proposal | None:
    """Back to pending with ``next_attempt_at``; the next attempt is enqueued after commit."""
    return await PROPOSAL.move(
        work,
        lifecycles.RETRY_LATER,
        proposal_id,
        actor_id=actor_id,
        guard=guard,
        values={"next_attempt_at": at, "lease_expires_at": None, "last_error_code": error_code},
    )


async def fail_terminally(
    work: UnitOfWork,
    proposal_id: str,
    guard: Any,
    error_code: str,
    *,
    edge: lifecycles.ProposalEdge = lifecycles.FAIL,
    actor_id: str | None = None,
    **details: Any,
) -> Proposal | None:
    """Terminal failure: no more attempts, a dead letter and an incident."""
    failed = await PROPOSAL.move(
        work,
        edge,
        proposal_id,
        actor_id=actor_id,
        guard=guard,
        values={
            "delivery_terminal": True,
            "next_attempt_at": None,
            "lease_expires_at": None,
            "last_error_code": error_code,
        },
        details={"error_code": error_code, **details},
    )
    if failed is not None:
        await record_delivery_dead_letter(work, failed, error_code, **details)
    return failed
