"""Dead letters and incidents: the record of work that gave up, for operators to act on.

A dead letter is one occurrence; the incident is the problem, upserted by
fingerprint (``<job type>:<job id>``) so a recurrence counts up and re-opens it
instead of opening another.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import update
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
from signoff.resolvers.core.lifecycles import INCIDENT
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


async def announce_occurrence(
    work: UnitOfWork, incident_id: str, *, actor_id: str | None = None, **details: Any
) -> Incident:
    """Audit and announce what the upsert just did: ``incident.opened`` for a new incident,
    ``incident.recurred`` for one it counted again."""
    incident = await work.session.get(Incident, incident_id, populate_existing=True)
    assert incident is not None  # just upserted
    opened = incident.occurrence_count == 1
    await INCIDENT.announce(
        work,
        incident,
        kind=ChangeKind.INCIDENT_OPENED if opened else ChangeKind.INCIDENT_RECURRED,
        action="incident.opened" if opened else "incident.recurred",
        actor_id=actor_id,
        details=details,
    )
    return incident


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
    recur_when: Any = None,
) -> str | None:
    """Insert the incident, or count another occurrence and re-open it; one statement, so two
    concurrent occurrences both count. Returns the incident id.

    With ``recur_when`` (a condition on the existing row) an existing incident is counted and
    re-opened only when it holds; otherwise nothing is written and ``None`` is returned.
    """
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
        opened_by_id=opened_by_id,
        state=IncidentState.OPEN.value,
        title=title,
        summary=summary,
        entity_type=entity_type,
        entity_id=entity_id,
        occurrence_count=1,
        last_error_code=error_code,
        first_seen_at=now,
        last_seen_at=now,
    )
    recurrence: dict[str, Any] = {
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
    }
    if summary is not None:
        recurrence["summary"] = summary
    upsert = stmt.on_conflict_do_update(
        index_elements=[table.c.fingerprint], set_=recurrence, where=recur_when
    ).returning(col(Incident.id))
    incident_id: str | None = (await session.exec(upsert)).scalar_one_or_none()
    return incident_id


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
