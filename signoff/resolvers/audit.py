"""Writing and reading the audit log."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.models import AuditEvent, Role
from signoff.resolvers.access import Viewer, require_role
from signoff.resolvers.pagination import Order, Page, paginate


def record(
    session: AsyncSession,
    *,
    actor_id: str | None,
    action: str,
    target_type: str,
    target_id: str,
    **details: Any,
) -> AuditEvent:
    """Add an audit event to the session; it commits with the change it describes."""
    event = AuditEvent(
        action=action,
        actor_id=actor_id,
        target_type=target_type,
        target_id=target_id,
        details=details,
    )
    session.add(event)
    return event


AUDIT_ORDER = (
    Order(col(AuditEvent.created_at), descending=True),
    Order(col(AuditEvent.id), descending=True),
)


async def list_audit_events(
    *,
    session: AsyncSession,
    viewer: Viewer,
    target_type: str | None = None,
    target_id: str | None = None,
    first: int | None = None,
    after: str | None = None,
) -> Page[AuditEvent]:
    """Newest first. The audit log is for operators and admins."""
    require_role(viewer, Role.OPERATOR)
    stmt = select(AuditEvent)
    if target_type is not None:
        stmt = stmt.where(AuditEvent.target_type == target_type)
    if target_id is not None:
        stmt = stmt.where(AuditEvent.target_id == target_id)
    return await paginate(session, stmt, AUDIT_ORDER, first=first, after=after)
