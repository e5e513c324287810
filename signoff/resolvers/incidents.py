"""Dead letters and incidents: the record of work that gave up, for operators to act on.

A dead letter is one occurrence; the incident is the problem, upserted by
fingerprint (``<job type>:<job id>``) so a recurrence counts up and re-opens it
instead of opening another.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import col

from signoff.constants import DELIVER_JOB, DELIVERY_INCIDENT_FINGERPRINT
from signoff.models import (
    SEVERITY_RANK,
    ChangeKind,
    DeadLetter,
    Incident,
    IncidentState,
    Proposal,
    Severity,
)
from signoff.models.base import new_id
from signoff.resolvers.lifecycles import INCIDENT
from signoff.resolvers.transitions import Happening, record
from signoff.resolvers.work import UnitOfWork


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
    incident = await work.session.get(Incident, incident_id, populate_existing=True)
    assert incident is not None  # just upserted
    opened = incident.occurrence_count == 1
    await INCIDENT.announce(
        work,
        incident,
        kind=ChangeKind.INCIDENT_OPENED if opened else ChangeKind.INCIDENT_RECURRED,
        action="incident.opened" if opened else "incident.recurred",
        actor_id=None,
        details={"dead_letter_id": letter.id, "error_code": error_code},
    )
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


async def upsert_incident(
    work: UnitOfWork,
    *,
    fingerprint: str,
    kind: str,
    title: str,
    entity_type: str,
    entity_id: str,
    error_code: str | None,
    severity: Severity = Severity.HIGH,
    summary: str | None = None,
    opened_by_id: str | None = None,
) -> str:
    """Insert the incident, or count another occurrence and re-open it; one statement, so two
    concurrent occurrences both count. Returns the incident id."""
    now, session = work.now(), work.session
    insert = (
        postgresql.insert
        if session.bind.dialect.name == "postgresql"  # type: ignore[union-attr]
        else sqlite.insert
    )
    table = Incident.__table__  # type: ignore[attr-defined]
    stmt = insert(table).values(
        id=new_id(),
        fingerprint=fingerprint,
        kind=kind,
        severity=severity.value,
        severity_rank=SEVERITY_RANK[severity],
        summary=summary,
        opened_by_id=opened_by_id,
        state=IncidentState.OPEN.value,
        title=title,
        entity_type=entity_type,
        entity_id=entity_id,
        occurrence_count=1,
        last_error_code=error_code,
        first_seen_at=now,
        last_seen_at=now,
    )
    upsert = stmt.on_conflict_do_update(
        index_elements=[table.c.fingerprint],
        set_={
            "occurrence_count": table.c.occurrence_count + 1,
            # ON CONFLICT DO UPDATE skips the column's onupdate: bump the version here.
            "version": table.c.version + 1,
            "state": IncidentState.OPEN.value,
            "title": title,
            "last_error_code": error_code,
            "last_seen_at": now,
            "acknowledged_at": None,
            "acknowledged_by_id": None,
            "resolved_at": None,
            "resolved_by_id": None,
            "resolution_code": None,
            "resolution_summary": None,
        },
    ).returning(col(Incident.id))
    incident_id: str = (await session.exec(upsert)).scalar_one()
    return incident_id
