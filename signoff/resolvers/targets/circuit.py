"""The circuit breaker: a target that keeps failing stops being sent to, without spending
its proposals' attempts, and is probed until it answers again.

The rules and the circuit's lifecycle are in docs/design.md section 4.16.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select, update

from signoff.constants import (
    CIRCUIT_FAILURE_THRESHOLD,
    CIRCUIT_PROBE_MAX_SECONDS,
    CIRCUIT_PROBE_SECONDS,
)
from signoff.delivery import AttemptOutcome
from signoff.models import CircuitState, Proposal, ResponseClass, Target
from signoff.resolvers.core.target_lifecycle import (
    CLOSE_CIRCUIT,
    DEFER_PROBE,
    OPEN_CIRCUIT,
    REOPEN_CIRCUIT,
    TARGET_CIRCUIT,
)
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.delivery.due import due
from signoff.resolvers.targets.health import raise_target_incident

# Failures of the endpoint rather than of one message: no answer, or an answer that says
# "not now". A 4xx about one message (REQUEST_REJECTED) means the receiver is up.
ENDPOINT_FAILURE_CODES = frozenset({"INVALID_URL"})


def breaks_circuit(outcome: AttemptOutcome) -> bool:
    return (
        outcome.response_class is ResponseClass.RETRYABLE
        or outcome.error_code in ENDPOINT_FAILURE_CODES
    )


def last_error_of(outcome: AttemptOutcome) -> str:
    """How the target's last error reads: the code, and the status when there was one."""
    code = outcome.error_code or "UNKNOWN"
    return code if outcome.status_code is None else f"{code} (HTTP {outcome.status_code})"


async def note_attempts(
    work: UnitOfWork, target_id: str, outcomes: Sequence[AttemptOutcome]
) -> None:
    """Count a batch of one target's recorded attempts (in the order they finished) and
    open, re-open or close its circuit accordingly."""
    if not outcomes:
        return
    trailing = _trailing_failures(outcomes)
    mended = trailing < len(outcomes)
    failures = [o for o in outcomes if breaks_circuit(o)]
    values: dict[str, Any] = {
        "consecutive_failures": (
            trailing if mended else col(Target.consecutive_failures) + trailing
        )
    }
    if failures:
        values["last_error"] = last_error_of(failures[-1])
        values["last_error_at"] = failures[-1].finished_at
    stmt = (
        update(Target)
        .where(col(Target.id) == target_id)
        .values(**values)
        .returning(Target)
        .execution_options(populate_existing=True)
    )
    if not failures:
        # Nothing to write or do for a closed circuit with no failures counted: skipping it
        # leaves the row unlocked for the next claim, which locks it.
        stmt = stmt.where(
            (col(Target.consecutive_failures) != 0)
            | (col(Target.circuit_state) != CircuitState.CLOSED.value)
        )
    target = (await work.session.exec(stmt)).scalars().one_or_none()
    if target is None:
        return
    if target.circuit_state == CircuitState.CLOSED:
        if target.consecutive_failures >= CIRCUIT_FAILURE_THRESHOLD:
            await _open(work, target, failures[-1])
    elif trailing == 0:
        await close_circuit(work, target.id, actor_id=None, details=_counts(target))
    elif failures:
        await _reopen(work, target)


def _trailing_failures(outcomes: Sequence[AttemptOutcome]) -> int:
    count = 0
    for outcome in reversed(outcomes):
        if not breaks_circuit(outcome):
            break
        count += 1
    return count


def _counts(target: Target) -> dict[str, Any]:
    """The audit details of a move the breaker makes by itself."""
    return {"consecutive_failures": target.consecutive_failures, "last_error": target.last_error}


async def _open(work: UnitOfWork, target: Target, last: AttemptOutcome) -> None:
    now = work.now()
    opened = await TARGET_CIRCUIT.move(
        work,
        OPEN_CIRCUIT,
        target.id,
        actor_id=None,
        values={
            "circuit_opened_at": now,
            "circuit_probe_at": now + timedelta(seconds=CIRCUIT_PROBE_SECONDS),
        },
        details=_counts(target),
    )
    if opened is None:
        return  # another worker's flush opened it first
    error = last_error_of(last)
    await raise_target_incident(
        work,
        opened,
        action="target.circuit_opened",
        title=(
            f"Target {opened.name}'s circuit is open: {opened.consecutive_failures} "
            f"consecutive attempts failed, last error {error}"
        ),
        summary=(
            f"{opened.consecutive_failures} delivery attempts in a row to {opened.name} failed "
            f"(the last: {error}). Its deliveries now wait without spending attempts; one is "
            f"sent as a probe every {CIRCUIT_PROBE_SECONDS} s or more, and the first that "
            f"succeeds closes the circuit. Check the receiver at {opened.url}; once it is "
            "fixed, closeTargetCircuit sends at once."
        ),
        error_code=last.error_code or "UNKNOWN",
        consecutive_failures=opened.consecutive_failures,
    )


async def _reopen(work: UnitOfWork, target: Target) -> None:
    """The probe failed (or a delivery in flight when the circuit opened): wait as long as
    the circuit has been open (at least one probe interval, at most the maximum) before
    the next. The statement that counted the failures holds the row, so its state is
    exact."""
    now = work.now()
    opened_at = target.circuit_opened_at or now
    wait = min(
        max((now - opened_at).total_seconds(), float(CIRCUIT_PROBE_SECONDS)),
        float(CIRCUIT_PROBE_MAX_SECONDS),
    )
    edge = REOPEN_CIRCUIT if target.circuit_state == CircuitState.HALF_OPEN else DEFER_PROBE
    await TARGET_CIRCUIT.move(
        work,
        edge,
        target.id,
        actor_id=None,
        values={"circuit_probe_at": now + timedelta(seconds=wait)},
        details=_counts(target),
    )


async def close_circuit(
    work: UnitOfWork, target_id: str, *, actor_id: str | None, details: dict[str, Any]
) -> Target | None:
    """Close an open circuit (compare-and-set; ``None`` if it was closed) and, after commit,
    wake delivery for the deliveries that waited."""
    closed = await TARGET_CIRCUIT.move(
        work,
        CLOSE_CIRCUIT,
        target_id,
        actor_id=actor_id,
        values={"consecutive_failures": 0, "circuit_opened_at": None, "circuit_probe_at": None},
        details=details,
    )
    if closed is not None:
        await _wake_waiting(work, target_id)
    return closed


async def _wake_waiting(work: UnitOfWork, target_id: str) -> None:
    """One job for the oldest waiting delivery wakes a worker, whose claim takes the rest."""
    oldest = (
        await work.session.exec(
            select(Proposal.id, Proposal.delivery_attempt_count)
            .where(col(Proposal.target_id) == target_id, due(work.now()))
            .order_by(col(Proposal.next_attempt_at))
            .limit(1)
        )
    ).first()
    if oldest is not None:
        work.schedule_delivery(oldest[0], oldest[1] + 1)


def accepting(now: Any) -> Any:
    """The target takes deliveries now: its circuit is closed, or a probe is due."""
    return sa.or_(
        col(Target.circuit_state) == CircuitState.CLOSED.value,
        col(Target.circuit_probe_at) <= now,
    )
