"""Dead letters and incidents: the record of work that gave up, for operators to act on.

A dead letter is one occurrence; the incident is the problem, upserted by
fingerprint (``<job type>:<job id>``) so a recurrence counts up and re-opens it
instead of opening another.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import update
from sqlmodel import col

from signoff.constants import DELIVER_JOB, DELIVERY_INCIDENT_FINGERPRINT
from signoff.models import (
    DeadLetter,
    Incident,
    IncidentState,
    Proposal,
)
from signoff.resolvers.core.occurrences import announce_occurrence, upsert_incident
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork


async def record_delivery_dead_letter(
    work: UnitOfWork, proposal: Proposal, error_code: str, **details: Any
) -> DeadLetter:
    """Dead-letter a proposal's delivery and open (or count and re-open) its incident."""
    incident_id = await upsert_incident(
        work,
        fingerprint=DELIVERY_INCIDENT_FINGERPRINT.format(proposal_id=proposal.id),
        kind="delivery_dead_letter",
        title=f"Delivery of {proposal.action_code} failed terminally ({error_code})",
        entity_type="proposal",
        entity_id=proposal.id,
        error_code=error_code,
    )
    assert incident_id is not None  # unconditional: inserted or counted
    letter = DeadLetter(
        incident_id=incident_id,
        job_type=DELIVER_JOB,
        job_id=proposal.id,
        proposal_id=proposal.id,
        error_code=error_code,
        attempt_count=proposal.delivery_attempt_count,
        details=details,
        created_at=work.now(),
    )
    work.session.add(letter)
    await announce_occurrence(work, incident_id, dead_letter_id=letter.id, error_code=error_code)
    record(
        work,
        Happening(
            entity_type="proposal",
            entity_id=proposal.id,
            actor_id=None,
            action="proposal.dead_lettered",
            details={
                "dead_letter_id": letter.id,
                "incident_id": incident_id,
                "error_code": error_code,
                "attempts": proposal.delivery_attempt_count,
            },
        ),
    )
    return letter


async def refresh_incident(
    work: UnitOfWork, *, fingerprint: str, title: str, summary: str, error_code: str
) -> bool:
    """Bring a still-open incident's description up to date without counting an occurrence
    (like a lease renewal: no change event, no audit; the version is bumped all the same)."""
    stmt = (
        update(Incident)
        .where(
            col(Incident.fingerprint) == fingerprint,
            col(Incident.state) != IncidentState.RESOLVED.value,
        )
        .values(
            title=title,
            summary=summary,
            last_error_code=error_code,
            last_seen_at=work.now(),
            version=col(Incident.version) + 1,
        )
        .returning(col(Incident.id))
    )
    return (await work.session.exec(stmt)).first() is not None
