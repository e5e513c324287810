"""An incident's occurrence: opened, or counted again and re-opened, by one upsert per
fingerprint, so two concurrent occurrences both count.

It is the one write of a state the core makes without a compare-and-set (docs/design.md
section 6.2, rows I1 and I2): inserting and re-opening are one statement, and
``announce_occurrence`` records which of the two it was.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import col

from signoff.models import SEVERITY_RANK, ChangeKind, Incident, IncidentState, Severity
from signoff.models.base import new_id
from signoff.resolvers.core.lifecycles import INCIDENT
from signoff.resolvers.core.work import UnitOfWork


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
