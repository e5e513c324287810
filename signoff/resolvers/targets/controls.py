"""An operator's controls over a target's delivery: its limits, and closing its circuit.

How claims honour the limits (``signoff.resolvers.targets.limits``) and when the circuit
opens and closes by itself (``signoff.resolvers.targets.circuit``) is the delivery engine's
(docs/design.md sections 4.15 and 4.16); these operations only change the settings, each
audited and announced on the change feed like pausing (``signoff.resolvers.targets.targets``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import update
from sqlmodel import col

from signoff.constants import REASON_MAX_CHARS, REASON_MIN_CHARS
from signoff.errors import TargetCircuitNotOpen, ValidationFailed
from signoff.models import ChangeKind, CircuitState, Role, Target
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.core import idempotency
from signoff.resolvers.core.target_lifecycle import TARGET_CIRCUIT
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.targets.circuit import close_circuit
from signoff.resolvers.targets.targets import (
    TargetResult,
    announce,
    iso,
    keyed_change,
    locked,
    require_max_concurrency,
    require_rate,
)
from signoff.validation import require_text


async def set_target_limits(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    target_id: str,
    max_concurrency: int | None = None,
    rate_per_second: float | None = None,
    clear_rate: bool = False,
    idempotency_key: str | None = None,
) -> TargetResult:
    """Change a target's concurrency limit, rate limit, or both; what is left out stays.

    A new (or cleared) rate starts the limiter afresh, so the old rate's spacing does not
    hold the first delivery under the new one."""
    require_role(viewer, Role.OPERATOR)
    changes = _limit_changes(max_concurrency, rate_per_second, clear_rate)
    call = idempotency.Keyed.of(
        "setTargetLimits",
        idempotency_key,
        {
            "target_id": target_id,
            "max_concurrency": max_concurrency,
            "rate_per_second": rate_per_second,
            "clear_rate": clear_rate,
        },
    )

    async def change() -> Target:
        before = _limits(await locked(work, target_id))
        stmt = (
            update(Target)
            .where(col(Target.id) == target_id)
            .values(**changes)
            .returning(Target)
            .execution_options(populate_existing=True)
        )
        target: Target = (await work.session.exec(stmt)).scalars().one()
        after = _limits(target)
        announce(
            work,
            viewer,
            target,
            "target.limits_changed",
            ChangeKind.TARGET_LIMITS_CHANGED,
            {"maxConcurrency": target.max_concurrency, "ratePerSecond": target.rate_per_second},
            before=before,
            after=after,
        )
        return target

    return await keyed_change(work, viewer, call, change)


def _limits(target: Target) -> dict[str, Any]:
    return {"max_concurrency": target.max_concurrency, "rate_per_second": target.rate_per_second}


def _limit_changes(
    max_concurrency: int | None, rate_per_second: float | None, clear_rate: bool
) -> dict[str, Any]:
    """The columns a ``setTargetLimits`` call sets, once its input is checked."""
    if rate_per_second is not None and clear_rate:
        raise ValidationFailed(
            "Give ratePerSecond to set a rate, or clearRate: true to remove it, not both.",
            field="clearRate",
        )
    changes: dict[str, Any] = {}
    if max_concurrency is not None:
        changes["max_concurrency"] = require_max_concurrency(max_concurrency)
    if clear_rate:
        changes |= {"rate_per_second": None, "rate_available_at": None}
    elif rate_per_second is not None:
        changes |= {"rate_per_second": require_rate(rate_per_second), "rate_available_at": None}
    if not changes:
        raise ValidationFailed(
            "Nothing to change: give maxConcurrency, ratePerSecond or clearRate: true."
        )
    return changes


async def close_target_circuit(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    target_id: str,
    reason: str,
    idempotency_key: str | None = None,
) -> TargetResult:
    """Close an OPEN or HALF_OPEN circuit at once, for an operator who fixed the receiver,
    the way a successful probe closes it: its failure count starts again from zero and its
    waiting deliveries are woken after commit. A closed circuit is refused
    (``TARGET_CIRCUIT_NOT_OPEN``) unless the call repeats an idempotency key."""
    require_role(viewer, Role.OPERATOR)
    reason = require_text(reason, "reason", REASON_MIN_CHARS, REASON_MAX_CHARS)
    call = idempotency.Keyed.of(
        "closeTargetCircuit", idempotency_key, {"target_id": target_id, "reason": reason}
    )

    async def close() -> Target:
        before = await locked(work, target_id)
        closed = await close_circuit(
            work,
            target_id,
            actor_id=viewer.id,
            details={
                "reason": reason,
                "circuit_state": str(before.circuit_state),  # a plain string once loaded
                "consecutive_failures": before.consecutive_failures,
                "circuit_opened_at": iso(before.circuit_opened_at),
            },
        )
        if closed is None:
            await TARGET_CIRCUIT.refuse(work, target_id, _not_open)
        return closed

    return await keyed_change(work, viewer, call, close)


def _not_open(current: Target) -> Exception:
    return TargetCircuitNotOpen(
        f"The circuit of target {current.name!r} is closed: deliveries already flow (another "
        "operator, or a successful probe, may have just closed it).",
        circuitState=CircuitState.CLOSED.value,
    )
