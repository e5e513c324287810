"""Reading the audit log. It is written by the transition core
(``signoff.resolvers.core.transitions.record``), from the same description as the change feed."""

from __future__ import annotations

from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.models import AuditEvent, Role
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.core.pagination import Equals, Order, Page, Where, paginate

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
    where: list[Where] = []
    if target_type is not None:
        where.append(Equals(col(AuditEvent.target_type), target_type))
    if target_id is not None:
        where.append(Equals(col(AuditEvent.target_id), target_id))
    return await paginate(session, AuditEvent, where, AUDIT_ORDER, first=first, after=after)
