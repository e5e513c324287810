"""Recording changes in the change feed.

``record_change`` is the one way state changes enter the feed: every resolver and
job that changes state calls it next to its ``audit.record``, in the same
transaction. The event gets its cursor after commit (``signoff.events.feed``).

Events of proposals, tasks and incidents carry the entity's ``version`` as it is
after the change. The helpers read it from the object, so the object must hold the
row as updated: returned by the compare-and-set statement, or flushed after its
attributes changed (an unflushed change would be bumped by the flush, after the
event took the old number; ``_version_after`` refuses that).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.database import after_commit
from signoff.models import ChangeEvent, ChangeKind, HumanTask, Incident, Proposal


def record_change(
    session: AsyncSession,
    *,
    kind: ChangeKind,
    entity_type: str,
    entity_id: str,
    queue_id: str | None = None,
    proposal_id: str | None = None,
    actor_id: str | None = None,
    snapshot: dict[str, Any] | None = None,
    entity_version: int | None = None,
) -> ChangeEvent:
    """Add a change event to the session; it commits with the change and is published after."""
    event = ChangeEvent(
        kind=kind.value,
        entity_type=entity_type,
        entity_id=entity_id,
        entity_version=entity_version,
        queue_id=queue_id,
        proposal_id=proposal_id,
        actor_id=actor_id,
        snapshot=snapshot or {},
    )
    session.add(event)
    service = session.info.get("events")
    if service is not None and service.kick not in session.info.get("after_commit", []):
        after_commit(session, service.kick)
    return event


def _version_after(entity: Proposal | HumanTask | Incident) -> int:
    """The entity's version including this change, which must already be in the database."""
    state = sa.inspect(entity)
    assert not (state.persistent and state.modified), (
        f"flush the {type(entity).__name__} before recording its change: "
        "the flush will bump its version"
    )
    return entity.version


def record_proposal_change(
    session: AsyncSession, kind: ChangeKind, proposal: Proposal, actor_id: str | None
) -> ChangeEvent:
    return record_change(
        session,
        kind=kind,
        entity_type="proposal",
        entity_id=proposal.id,
        entity_version=_version_after(proposal),
        queue_id=proposal.queue_id,
        proposal_id=proposal.id,
        actor_id=actor_id,
        snapshot={
            "state": str(proposal.state),
            "actionCode": proposal.action_code,
            "approvalCount": proposal.approval_count,
            "proposedById": proposal.proposed_by_id,
            "deliveryAttemptCount": proposal.delivery_attempt_count,
            "lastErrorCode": proposal.last_error_code,
            "deliveryTerminal": proposal.delivery_terminal,
        },
    )


def record_task_change(
    session: AsyncSession,
    kind: ChangeKind,
    task: HumanTask,
    actor_id: str | None,
    proposed_by_id: str | None = None,
) -> ChangeEvent:
    snapshot: dict[str, Any] = {
        "state": str(task.state),
        "kind": task.kind,
        "assigneeId": task.assignee_id,
    }
    if proposed_by_id is not None:
        snapshot["proposedById"] = proposed_by_id
    return record_change(
        session,
        kind=kind,
        entity_type="task",
        entity_id=task.id,
        entity_version=_version_after(task),
        queue_id=task.queue_id,
        proposal_id=task.proposal_id,
        actor_id=actor_id,
        snapshot=snapshot,
    )


def record_incident_change(
    session: AsyncSession, incident: Incident, *, opened: bool
) -> ChangeEvent:
    """An incident opened for the first time, or occurring again (which re-opens it)."""
    return record_change(
        session,
        kind=ChangeKind.INCIDENT_OPENED if opened else ChangeKind.INCIDENT_RECURRED,
        entity_type="incident",
        entity_id=incident.id,
        entity_version=_version_after(incident),
        snapshot={
            "state": str(incident.state),
            "title": incident.title,
            "fingerprint": incident.fingerprint,
            "occurrenceCount": incident.occurrence_count,
            "lastErrorCode": incident.last_error_code,
            "entityType": incident.entity_type,
            "entityId": incident.entity_id,
        },
    )
