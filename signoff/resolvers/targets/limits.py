"""Per-target limits: how many of a target's deliveries a claim may take now.

At most ``max_concurrency`` in flight, a GCRA rate limiter kept on the target's row so
every worker shares it, and only a probe while the circuit is not closed (docs/design.md
sections 4.15 and 4.16).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from signoff.models import CircuitState, Target

BURST_SECONDS = 1.0


@dataclass(frozen=True)
class Allowance:
    """What a claim may take from one target now, and when to look again if nothing."""

    target: Target
    quota: int
    probe: bool = False
    retry_at: datetime | None = None


def allowance(target: Target, in_flight: int, now: datetime) -> Allowance:
    """The target's allowance given its deliveries in flight."""
    if target.circuit_state != CircuitState.CLOSED:
        probe_due = target.circuit_probe_at is None or target.circuit_probe_at <= now
        if not probe_due:
            return Allowance(target, 0, retry_at=target.circuit_probe_at)
        if in_flight == 0:
            return Allowance(target, 1, probe=True)
        # The probe waits for the deliveries still in flight: no time to look again at (the
        # probe time has passed), but the next poll, or the wake when they are recorded.
        return Allowance(target, 0)
    quota = max(0, target.max_concurrency - in_flight)
    rate = target.rate_per_second
    if rate is None or quota == 0:
        return Allowance(target, quota)
    burst = max(1.0, rate * BURST_SECONDS)
    tat = max(target.rate_available_at or now, now)
    allowed = math.floor(burst - (tat - now).total_seconds() * rate + 1e-9)
    if allowed > 0:
        return Allowance(target, min(quota, allowed))
    # The next delivery fits once the limiter's debt falls below one burst less one.
    return Allowance(target, 0, retry_at=tat - timedelta(seconds=(burst - 1.0) / rate))


def rate_available_after(target: Target, taken: int, now: datetime) -> datetime | None:
    """The limiter's new state after ``taken`` deliveries were claimed (``None``: no rate)."""
    rate = target.rate_per_second
    if rate is None:
        return None
    tat = max(target.rate_available_at or now, now)
    return tat + timedelta(seconds=taken / rate)


def share(slots: int, allowances: Sequence[Allowance]) -> dict[str, int]:
    """Divide a worker's free slots among targets one at a time, round-robin, so a target
    with a deep backlog cannot take every slot from the others."""
    left = {a.target.id: a.quota for a in allowances if a.quota > 0}
    given = dict.fromkeys(left, 0)
    while slots > 0 and left:
        for target_id in list(left):
            if slots == 0:
                break
            given[target_id] += 1
            slots -= 1
            left[target_id] -= 1
            if left[target_id] == 0:
                del left[target_id]
    return {target_id: n for target_id, n in given.items() if n > 0}
