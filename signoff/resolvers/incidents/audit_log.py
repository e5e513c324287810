"""Reconciliation's look at the verifiable audit log: does the stored log still give the
latest checkpoint? If not, a CRITICAL incident names the first position that disagrees
(docs/design.md section 15)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy import or_
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.events import auditlog
from signoff.evidence.verify import Frontier, entry_hash
from signoff.models import AuditCheckpoint, Incident, IncidentState, Severity
from signoff.resolvers.core.occurrences import announce_occurrence, upsert_incident
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import WorkMaker
from signoff.resolvers.incidents.incidents import refresh_incident

FINGERPRINT = "audit_log"
KIND = "audit_log_mismatch"


@dataclass(frozen=True)
class Disagreement:
    checkpoint_size: int
    position: int
    reason: str


async def check_audit_log(make: WorkMaker) -> Disagreement | None:
    """Compare the stored log with its latest checkpoint; open (or keep open) a CRITICAL
    incident when they disagree."""
    async with make() as work:
        latest = await auditlog.latest_checkpoint(work.session)
        found = None if latest is None else await disagreement(work.session, latest)
        if found is None:
            await work.rollback()
            return None
        title = (
            f"The audit log disagrees with its checkpoint of size {found.checkpoint_size} "
            f"at position {found.position}"
        )
        incident_id = await upsert_incident(
            work,
            fingerprint=FINGERPRINT,
            kind=KIND,
            title=title,
            entity_type="audit_log",
            entity_id=str(found.checkpoint_size),
            error_code="AUDIT_LOG_MISMATCH",
            severity=Severity.CRITICAL,
            summary=found.reason,
            recur_when=or_(col(Incident.state) == IncidentState.RESOLVED.value),
        )
        if incident_id is None:  # open already: keep its description current
            await refresh_incident(
                work,
                fingerprint=FINGERPRINT,
                title=title,
                summary=found.reason,
                error_code="AUDIT_LOG_MISMATCH",
            )
        else:
            await announce_occurrence(work, incident_id, position=found.position)
            record(
                work,
                Happening(
                    entity_type="incident",
                    entity_id=incident_id,
                    actor_id=None,
                    action="audit_log.mismatch",
                    details={
                        "checkpoint_size": found.checkpoint_size,
                        "position": found.position,
                        "reason": found.reason,
                    },
                ),
            )
        await work.commit()
        return found


async def disagreement(session: AsyncSession, latest: AuditCheckpoint) -> Disagreement | None:
    """The first place where the stored log does not give ``latest``: a record missing or
    repeated, a record of the last checkpoint's tail that no longer hashes to its leaf, or
    a root that differs (named at the previous checkpoint's size)."""
    size, since = latest.size, latest.previous_size or 0
    if await auditlog.log_size(session) < size:
        return Disagreement(size, await auditlog.log_size(session), "the log was rolled back")
    connection = await session.connection()
    rows = await connection.execute(
        sa.select(auditlog.AUDIT.c.position, auditlog.AUDIT.c.leaf_hash)
        .where(auditlog.AUDIT.c.position < size)
        .order_by(auditlog.AUDIT.c.position)
    )
    frontier = Frontier()
    for position, leaf in rows:
        if position != frontier.size or leaf is None:
            return Disagreement(size, frontier.size, "a record is missing or repeated")
        frontier.append(bytes.fromhex(leaf))
    if frontier.size < size:
        return Disagreement(size, frontier.size, "records covered by the checkpoint are gone")
    async with contextlib.aclosing(auditlog.entries(session, since=since, through=size)) as tail:
        async for entry, leaf in tail:
            if leaf != entry_hash(entry).hex():
                return Disagreement(size, entry["position"], "the record does not match its leaf")
    if frontier.root().hex() != latest.root:
        return Disagreement(size, since, "the stored leaves do not give the checkpoint's root")
    return None
