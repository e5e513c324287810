"""Who is asking, and what they may see and do."""

from __future__ import annotations

from dataclasses import dataclass

from signoff.errors import Forbidden
from signoff.models import Actor, Role

STAFF = frozenset({Role.OPERATOR, Role.ADMIN})


@dataclass(frozen=True)
class Viewer:
    """An authenticated actor with the queues it belongs to."""

    actor: Actor
    queue_ids: frozenset[str]

    @property
    def id(self) -> str:
        return self.actor.id

    @property
    def role(self) -> Role:
        return Role(self.actor.role)

    @property
    def sees_everything(self) -> bool:
        return self.role in STAFF

    def can_see_queue(self, queue_id: str | None) -> bool:
        return self.sees_everything or (queue_id is not None and queue_id in self.queue_ids)


def require_role(viewer: Viewer, *roles: Role) -> None:
    """Admins may do anything; everyone else needs one of ``roles``."""
    if viewer.role is Role.ADMIN or viewer.role in roles:
        return
    allowed = ", ".join(sorted(role.value for role in roles))
    raise Forbidden(f"This needs the role {allowed}; you are {viewer.role.value}.")


def require_reviewer_of(viewer: Viewer, queue_id: str | None) -> None:
    """Deciding work needs a reviewer who belongs to the work's queue (or an admin)."""
    require_role(viewer, Role.REVIEWER)
    if viewer.role is Role.ADMIN:
        return
    if queue_id is None or queue_id not in viewer.queue_ids:
        raise Forbidden("You are not a reviewer of this queue.")
