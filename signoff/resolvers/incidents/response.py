"""Working an incident (operators): find it, acknowledge it, retry its work, resolve it; and
incidents raised by people or integrations (``openIncident``).

An incident moves ``OPEN`` → ``ACKNOWLEDGED`` → ``RESOLVED`` through the transition core
(docs/design.md section 6.2), and its dead letters follow it. A resolved incident is closed
to everything but a recurrence, which re-opens it (``signoff.resolvers.core.occurrences``).
Every mutation here takes an idempotency key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlmodel import col, or_, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import IncidentResolved, NotRepairable, ResolutionInvalid
from signoff.models import (
    AuditEvent,
    DeadLetter,
    DeadLetterState,
    Incident,
    IncidentState,
    Proposal,
    ProposalState,
    RepairAction,
    Role,
    Severity,
)
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.core import idempotency, lifecycles
from signoff.resolvers.core.lifecycles import DEAD_LETTER, INCIDENT, PROPOSAL
from signoff.resolvers.core.occurrences import announce_occurrence, upsert_incident
from signoff.resolvers.core.pagination import Equals, Order, Page, Where, paginate
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.transitions import Edge
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.delivery.retries import requeue_terminal
from signoff.validation import optional_text, require_text

CODE = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
SUMMARY_MIN_CHARS, SUMMARY_MAX_CHARS = 3, 2000
OPENED_FINGERPRINT = "opened:{key}"

# Most severe first, then most recently seen.
INCIDENT_ORDER = (
    Order(col(Incident.severity_rank)),
    Order(col(Incident.last_seen_at), descending=True),
    Order(col(Incident.id), descending=True),
)


@dataclass(frozen=True)
class IncidentResult:
    incident: Incident
    replayed: bool


@dataclass(frozen=True)
class IncidentRetryResult:
    incident: Incident
    repair_action: RepairAction
    replayed: bool


@dataclass(frozen=True)
class OpenResult:
    incident: Incident
    deduplicated: bool  # an unresolved incident with this key existed: it is returned as is


# --- reading -----------------------------------------------------------------------


async def list_incidents(
    *,
    session: AsyncSession,
    viewer: Viewer,
    state: IncidentState | None = None,
    severity: Severity | None = None,
    category: str | None = None,
    first: int | None = None,
    after: str | None = None,
) -> Page[Incident]:
    require_role(viewer, Role.OPERATOR)
    where: list[Where] = []
    if state is not None:
        where.append(Equals(col(Incident.state), state.value))
    if severity is not None:
        where.append(Equals(col(Incident.severity), severity.value))
    if category is not None:
        where.append(Equals(col(Incident.kind), category))
    return await paginate(session, Incident, where, INCIDENT_ORDER, first=first, after=after)


async def get_incident(*, session: AsyncSession, viewer: Viewer, incident_id: str) -> Incident:
    require_role(viewer, Role.OPERATOR)
    return await _load(session, incident_id)


async def dead_letters_of(session: AsyncSession, incident_id: str) -> list[DeadLetter]:
    stmt = (
        select(DeadLetter)
        .where(DeadLetter.incident_id == incident_id)
        .order_by(col(DeadLetter.created_at).desc(), col(DeadLetter.id).desc())
    )
    return list((await session.exec(stmt)).all())


async def audit_trail_of(session: AsyncSession, incident: Incident) -> list[AuditEvent]:
    """What happened to the incident and to what it is about, oldest first."""
    about = [(AuditEvent.target_type == "incident") & (AuditEvent.target_id == incident.id)]
    if incident.entity_type and incident.entity_id:
        about.append(
            (AuditEvent.target_type == incident.entity_type)
            & (AuditEvent.target_id == incident.entity_id)
        )
    stmt = (
        select(AuditEvent)
        .where(or_(*about))
        .order_by(col(AuditEvent.created_at), col(AuditEvent.id))
        .limit(200)
    )
    return list((await session.exec(stmt)).all())


# --- acknowledging, resolving ------------------------------------------------------


async def acknowledge_incident(
    *, work: UnitOfWork, viewer: Viewer, incident_id: str, idempotency_key: str | None = None
) -> IncidentResult:
    """Take an incident up; acknowledging one already acknowledged changes nothing."""
    require_role(viewer, Role.OPERATOR)

    async def acknowledge() -> Incident:
        incident = await _load_unresolved(work.session, incident_id)
        moved = await INCIDENT.move(
            work,
            lifecycles.ACKNOWLEDGE,
            incident.id,
            actor_id=viewer.id,
            values={"acknowledged_at": work.now(), "acknowledged_by_id": viewer.id},
        )
        if moved is None:  # acknowledged already, or resolved meanwhile
            current = await INCIDENT.reread(work, incident_id)
            if current.state == IncidentState.RESOLVED:
                raise IncidentResolved()
            return current
        await _letters(work, moved, lifecycles.TAKE_UP_LETTER)
        return moved

    call = idempotency.Keyed.of(
        "acknowledgeIncident", idempotency_key, {"incident_id": incident_id}
    )
    incident, replayed = await idempotency.once(work, viewer, call, acknowledge, _KEPT)
    return IncidentResult(incident, replayed)


async def resolve_incident(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    incident_id: str,
    code: str,
    summary: str,
    idempotency_key: str | None = None,
) -> IncidentResult:
    """Close an incident with what was done about it; a recurrence re-opens it."""
    require_role(viewer, Role.OPERATOR)
    code, summary = _check_resolution(code, summary)

    async def resolve() -> Incident:
        await _load_unresolved(work.session, incident_id)
        moved = await INCIDENT.move(
            work,
            lifecycles.RESOLVE,
            incident_id,
            actor_id=viewer.id,
            values={
                "resolved_at": work.now(),
                "resolved_by_id": viewer.id,
                "resolution_code": code,
                "resolution_summary": summary,
            },
            details={"code": code, "summary": summary},
        )
        if moved is None:
            await INCIDENT.refuse(work, incident_id, lambda _: IncidentResolved())
        await _letters(work, moved, lifecycles.SETTLE_LETTER)
        return moved

    call = idempotency.Keyed.of(
        "resolveIncident",
        idempotency_key,
        {"incident_id": incident_id, "code": code, "summary": summary},
    )
    incident, replayed = await idempotency.once(work, viewer, call, resolve, _KEPT)
    return IncidentResult(incident, replayed)


def _check_resolution(code: str, summary: str) -> tuple[str, str]:
    code, summary = code.strip(), summary.strip()
    if not CODE.match(code):
        raise ResolutionInvalid(
            "code must be 2 to 64 lowercase letters, digits or underscores, starting with a "
            "letter (for example: receiver_fixed).",
            field="code",
        )
    if not SUMMARY_MIN_CHARS <= len(summary) <= SUMMARY_MAX_CHARS:
        raise ResolutionInvalid(
            f"summary must be {SUMMARY_MIN_CHARS} to {SUMMARY_MAX_CHARS} characters.",
            field="summary",
        )
    return code, summary


# --- retrying ----------------------------------------------------------------------


async def retry_incident(
    *, work: UnitOfWork, viewer: Viewer, incident_id: str, idempotency_key: str | None = None
) -> IncidentRetryResult:
    """Send the incident's failed work again: its proposal goes back to pending with its
    attempts reset and its delivery is enqueued; the incident and its dead letters are
    acknowledged, and a repair action records the before and after. If the work fails
    again, the same incident counts the occurrence and re-opens."""
    require_role(viewer, Role.OPERATOR)

    async def retry() -> IncidentRetryResult:
        incident = await _load_unresolved(work.session, incident_id)
        proposal = await _repairable_proposal(work.session, incident)
        before = _delivery_state(proposal)
        requeued = await requeue_terminal(
            work, proposal, actor_id=viewer.id, incident_id=incident.id
        )
        if requeued is None:
            await PROPOSAL.refuse(
                work,
                proposal.id,
                lambda _: NotRepairable("The delivery was retried or changed just now; reload it."),
            )
        repair = RepairAction(
            incident_id=incident.id,
            action_type="retry_delivery",
            entity_type="proposal",
            entity_id=proposal.id,
            operation_key=f"retry_delivery:{incident.id}:{proposal.id}:{proposal.version}",
            before=before,
            after=_delivery_state(requeued),
            actor_id=viewer.id,
            created_at=work.now(),
        )
        work.session.add(repair)
        moved = await INCIDENT.move(
            work,
            lifecycles.RETRY,
            incident.id,
            actor_id=viewer.id,
            values={"acknowledged_at": work.now(), "acknowledged_by_id": viewer.id},
            details={"repair_action_id": repair.id, "proposal_id": proposal.id},
        )
        if moved is None:
            await INCIDENT.refuse(work, incident_id, lambda _: IncidentResolved())
        await _letters(work, moved, lifecycles.TAKE_UP_LETTER)
        return IncidentRetryResult(moved, repair, replayed=False)

    async def replay(work: UnitOfWork, stored: dict[str, Any]) -> IncidentRetryResult:
        incident = await _load(work.session, stored["incident_id"], refresh=True)
        repair = await work.session.get(RepairAction, stored["repair_action_id"])
        assert repair is not None  # repair actions are never deleted
        return IncidentRetryResult(incident, repair, replayed=True)

    call = idempotency.Keyed.of("retryIncident", idempotency_key, {"incident_id": incident_id})
    kept = idempotency.Kept(
        result_of=lambda done: {
            "incident_id": done.incident.id,
            "repair_action_id": done.repair_action.id,
        },
        replay=replay,
    )
    result, _ = await idempotency.once(work, viewer, call, retry, kept)
    return result


async def _repairable_proposal(session: AsyncSession, incident: Incident) -> Proposal:
    """The proposal whose terminal failure the incident records, if a retry can repair it."""
    proposal_id = incident.entity_id if incident.entity_type == "proposal" else None
    if proposal_id is None:
        letters = await dead_letters_of(session, incident.id)
        proposal_id = next((d.proposal_id for d in letters if d.proposal_id), None)
    proposal = None if proposal_id is None else await session.get(Proposal, proposal_id)
    if proposal is None:
        raise NotRepairable("This incident records no delivery that a retry could repair.")
    if proposal.agent_executes:
        raise NotRepairable(
            "Its agent executed this proposal (or may have): an approval authorises one "
            "execution, so there is nothing to retry. Check the system it acts on, then "
            "resolve the incident.",
            state=proposal.state,
        )
    if proposal.state != ProposalState.FAILED or not proposal.delivery_terminal:
        raise NotRepairable(
            f"The proposal is {proposal.state}, not failed for good: there is nothing to retry.",
            state=proposal.state,
        )
    return proposal


def _delivery_state(proposal: Proposal) -> dict[str, Any]:
    return {
        "state": str(proposal.state),
        "deliveryTerminal": proposal.delivery_terminal,
        "deliveryAttemptCount": proposal.delivery_attempt_count,
        "lastErrorCode": proposal.last_error_code,
    }


# --- opening -----------------------------------------------------------------------


async def open_incident(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    key: str,
    severity: Severity,
    category: str,
    title: str,
    summary: str | None = None,
    entity_type: str | None = None,
    entity_id: str | None = None,
) -> OpenResult:
    """An incident raised by a person or an integration, one per ``key``: while it is
    unresolved the same key returns it unchanged; after it was resolved, the key re-opens
    it as a recurrence."""
    require_role(viewer, Role.OPERATOR, Role.INTEGRATION)
    key = require_text(key, "key", 1, 200)
    if not CODE.match(category):
        raise ResolutionInvalid(
            "category must be 2 to 64 lowercase letters, digits or underscores.",
            field="category",
        )
    title = require_text(title, "title", 1, 500)
    summary = optional_text(summary, "summary", SUMMARY_MIN_CHARS, SUMMARY_MAX_CHARS)
    fingerprint = OPENED_FINGERPRINT.format(key=key)
    existing = (
        await work.session.exec(select(Incident).where(Incident.fingerprint == fingerprint))
    ).first()
    if existing is not None and existing.state != IncidentState.RESOLVED:
        return OpenResult(existing, deduplicated=True)
    incident_id = await upsert_incident(
        work,
        fingerprint=fingerprint,
        kind=category,
        title=title,
        entity_type=require_text(entity_type, "entityType", 1, 50) if entity_type else "",
        entity_id=require_text(entity_id, "entityId", 1, 36) if entity_id else "",
        error_code=None,
        severity=severity,
        summary=summary,
        opened_by_id=viewer.id,
    )
    assert incident_id is not None  # unconditional: inserted or counted
    incident = await announce_occurrence(
        work, incident_id, actor_id=viewer.id, key=key, severity=severity.value, category=category
    )
    await work.commit()
    return OpenResult(incident, deduplicated=False)


# --- shared ------------------------------------------------------------------------


async def _load(session: AsyncSession, incident_id: str, *, refresh: bool = False) -> Incident:
    incident = await require_row(
        session, Incident, incident_id, "No such incident.", refresh=refresh
    )
    return incident


async def _load_unresolved(
    session: AsyncSession, incident_id: str, *, refresh: bool = False
) -> Incident:
    incident = await _load(session, incident_id, refresh=refresh)
    if incident.state == IncidentState.RESOLVED:
        raise IncidentResolved()
    return incident


# A keyed change to an incident answers with the incident as it is now.
_KEPT = idempotency.Kept.row(
    "incident_id",
    lambda incident: incident.id,
    lambda work, row_id: _load(work.session, row_id, refresh=True),
)


async def _letters(work: UnitOfWork, incident: Incident, edge: Edge[DeadLetterState]) -> None:
    """Move the incident's dead letters along with it."""
    stmt = select(DeadLetter.id).where(
        DeadLetter.incident_id == incident.id,
        col(DeadLetter.state).in_([s.value for s in edge.sources]),
    )
    ids = list((await work.session.exec(stmt)).all())
    await DEAD_LETTER.move_all(work, edge, ids, actor_id=None)
