"""Target health: a target whose deliveries keep failing is one incident, not one per
proposal, counted once per bout of failures (docs/design.md section 6.4).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import or_
from sqlmodel import col, select

from signoff.constants import (
    TARGET_HEALTH_FAILURE_PERCENT,
    TARGET_HEALTH_MIN_ATTEMPTS,
    TARGET_HEALTH_SAMPLE,
    TARGET_HEALTH_WINDOW_SECONDS,
    TARGET_INCIDENT_FINGERPRINT,
    TARGET_INCIDENT_KIND,
)
from signoff.delivery import AttemptOutcome
from signoff.models import (
    DeliveryAttempt,
    Incident,
    IncidentState,
    Proposal,
    ResponseClass,
    Severity,
    Target,
)
from signoff.resolvers.core.occurrences import announce_occurrence, upsert_incident
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.incidents.incidents import refresh_incident

FAILED_CLASSES = frozenset({ResponseClass.RETRYABLE, ResponseClass.TERMINAL})


@dataclass(frozen=True)
class Health:
    """A target's recent attempts: how many, and how many failed."""

    attempts: int
    failures: int

    @property
    def failure_percent(self) -> int:
        return 0 if not self.attempts else round(100 * self.failures / self.attempts)

    @property
    def unhealthy(self) -> bool:
        return (
            self.attempts >= TARGET_HEALTH_MIN_ATTEMPTS
            and 100 * self.failures >= TARGET_HEALTH_FAILURE_PERCENT * self.attempts
        )


async def recent_health(work: UnitOfWork, target_id: str) -> Health:
    """The target's last attempts within the window, as the health rule counts them."""
    since = work.now() - timedelta(seconds=TARGET_HEALTH_WINDOW_SECONDS)
    stmt = (
        select(DeliveryAttempt.response_class)
        .join(Proposal, col(Proposal.id) == col(DeliveryAttempt.proposal_id))
        .where(
            col(Proposal.target_id) == target_id,
            col(DeliveryAttempt.started_at) >= since,
            # Attempts in flight (or lost with their worker) say nothing of the receiver.
            col(DeliveryAttempt.response_class) != ResponseClass.UNKNOWN.value,
        )
        .order_by(col(DeliveryAttempt.started_at).desc(), col(DeliveryAttempt.id).desc())
        .limit(TARGET_HEALTH_SAMPLE)
    )
    classes = list((await work.session.exec(stmt)).all())
    failures = sum(1 for c in classes if ResponseClass(c) in FAILED_CLASSES)
    return Health(attempts=len(classes), failures=failures)


async def judge_target_health(work: UnitOfWork, target: Target, outcome: AttemptOutcome) -> None:
    """After a failed attempt is stored: open, count again, or refresh the target's incident."""
    if outcome.response_class not in FAILED_CLASSES:
        return
    await work.session.flush()  # the attempt just added counts
    health = await recent_health(work, target.id)
    if not health.unhealthy:
        return
    error_code = outcome.error_code or "UNKNOWN"
    title = (
        f"Target {target.name} is failing: {health.failures} of its last {health.attempts} "
        f"attempts failed ({health.failure_percent}%), last error {error_code}"
    )
    status = "" if outcome.status_code is None else f" (HTTP {outcome.status_code})"
    summary = (
        f"{health.failure_percent}% of the last {health.attempts} delivery attempts to "
        f"{target.name} within {TARGET_HEALTH_WINDOW_SECONDS // 60} minutes failed; the last "
        f"error was {error_code}{status}. Check the receiver at {target.url}, and consider "
        "pauseTarget until it is fixed."
    )
    await raise_target_incident(
        work,
        target,
        action="target.unhealthy",
        title=title,
        summary=summary,
        error_code=error_code,
        attempts=health.attempts,
        failures=health.failures,
        failure_percent=health.failure_percent,
    )


async def raise_target_incident(
    work: UnitOfWork,
    target: Target,
    *,
    action: str,
    title: str,
    summary: str,
    error_code: str,
    **facts: Any,
) -> None:
    """Open, count again, or refresh the target's one incident (``target:<id>``): the failure
    rate and the circuit breaker both raise it, so an operator sees one incident per target.
    """
    fingerprint = TARGET_INCIDENT_FINGERPRINT.format(target_id=target.id)
    stale = work.now() - timedelta(seconds=TARGET_HEALTH_WINDOW_SECONDS)
    incident_id = await upsert_incident(
        work,
        fingerprint=fingerprint,
        kind=TARGET_INCIDENT_KIND,
        title=title,
        entity_type="target",
        entity_id=target.id,
        error_code=error_code,
        severity=Severity.HIGH,
        summary=summary,
        # A new bout of failures, not the same one seen again.
        recur_when=or_(
            col(Incident.state) == IncidentState.RESOLVED.value,
            col(Incident.last_seen_at) <= stale,
        ),
    )
    if incident_id is None:
        await refresh_incident(
            work, fingerprint=fingerprint, title=title, summary=summary, error_code=error_code
        )
        return
    details: dict[str, Any] = {"target_id": target.id, "error_code": error_code, **facts}
    await announce_occurrence(work, incident_id, **details)
    record(
        work,
        Happening(
            entity_type="target",
            entity_id=target.id,
            actor_id=None,
            action=action,
            details={"incident_id": incident_id, **details},
        ),
    )
