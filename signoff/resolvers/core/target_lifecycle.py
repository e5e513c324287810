"""A target's three lifecycles: in service or retired, flowing or paused, and its circuit.

They are independent of each other (a retired target still delivers what was proposed,
and may be paused while it does; a paused target's circuit stays as it was), so each is
its own table over its own column. docs/design.md sections 4.16 and 6.5 show them.
"""

from __future__ import annotations

from signoff.models import ChangeKind, CircuitState, Target, TargetHold, TargetService
from signoff.resolvers.core.transitions import Edge, Lifecycle, Stamp, Subject
from signoff.resolvers.core.work import UnitOfWork

C = CircuitState

# --- in service --------------------------------------------------------------------

RETIRE = Edge.of(
    "retire",
    [TargetService.ACTIVE],
    TargetService.RETIRED,
    ChangeKind.TARGET_RETIRED,
    "target.retired",
)

# --- the operator's hold on deliveries ---------------------------------------------

PAUSE = Edge.of(
    "pause", [TargetHold.FLOWING], TargetHold.PAUSED, ChangeKind.TARGET_PAUSED, "target.paused"
)
RESUME = Edge.of(
    "resume", [TargetHold.PAUSED], TargetHold.FLOWING, ChangeKind.TARGET_RESUMED, "target.resumed"
)

# --- the circuit breaker (section 4.16) ----------------------------------------------

OPEN_CIRCUIT = Edge.of(
    "open_circuit", [C.CLOSED], C.OPEN, ChangeKind.TARGET_CIRCUIT_OPENED, "target.circuit_opened"
)
# A claim takes one delivery as a probe; a probe whose worker died is followed by another.
PROBE = Edge.of(
    "probe",
    [C.OPEN, C.HALF_OPEN],
    C.HALF_OPEN,
    ChangeKind.TARGET_CIRCUIT_HALF_OPENED,
    "target.circuit_half_opened",
)
REOPEN_CIRCUIT = Edge.of(
    "reopen_circuit",
    [C.HALF_OPEN],
    C.OPEN,
    ChangeKind.TARGET_CIRCUIT_OPENED,
    "target.circuit_reopened",
)
# A delivery claimed before the circuit opened failed too: the next probe waits longer.
# The circuit stays as it was, so nothing is announced.
DEFER_PROBE = Edge.of("defer_probe", [C.OPEN], C.OPEN, None, None)
# A probe's success, or an operator who fixed the receiver (closeTargetCircuit).
CLOSE_CIRCUIT = Edge.of(
    "close_circuit",
    [C.OPEN, C.HALF_OPEN],
    C.CLOSED,
    ChangeKind.TARGET_CIRCUIT_CLOSED,
    "target.circuit_closed",
)


async def describe_target(_: UnitOfWork, target: Target) -> Subject:
    return Subject(queue_id=target.queue_id, proposal_id=None, snapshot=target_snapshot(target))


def target_snapshot(target: Target) -> dict[str, object]:
    """What the feed says about a target after a move: its hold and its circuit."""
    return {
        "name": target.name,
        "pausedAt": None if target.paused_at is None else target.paused_at.isoformat(),
        "circuitState": str(target.circuit_state),
        "consecutiveFailures": target.consecutive_failures,
        "lastError": target.last_error,
        "nextProbeAt": (
            None if target.circuit_probe_at is None else target.circuit_probe_at.isoformat()
        ),
    }


TARGET_SERVICE: Lifecycle[Target, TargetService] = Lifecycle(
    "target",
    Target,
    [RETIRE],
    describe=describe_target,
    state_field="retired_at",
    stamp=Stamp(TargetService.ACTIVE, TargetService.RETIRED),
)
TARGET_HOLD: Lifecycle[Target, TargetHold] = Lifecycle(
    "target",
    Target,
    [PAUSE, RESUME],
    describe=describe_target,
    state_field="paused_at",
    stamp=Stamp(TargetHold.FLOWING, TargetHold.PAUSED),
)
TARGET_CIRCUIT: Lifecycle[Target, CircuitState] = Lifecycle(
    "target",
    Target,
    [OPEN_CIRCUIT, PROBE, REOPEN_CIRCUIT, DEFER_PROBE, CLOSE_CIRCUIT],
    describe=describe_target,
    state_field="circuit_state",
)
