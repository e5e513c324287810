"""Who is asking, and what they may see and do."""

from __future__ import annotations

from dataclasses import dataclass

from signoff.errors import Forbidden
from signoff.models import Actor, Role, Target

STAFF = frozenset({Role.OPERATOR, Role.ADMIN})


def sees(
    role: Role,
    queue_ids: frozenset[str],
    actor_id: str | None,
    *,
    queue_id: str | None,
    owner_id: str | None,
) -> bool:
    """The one read rule, for a viewer and for a feed subscriber alike: staff see
    everything; reviewers what is in their queues; agents what they made."""
    if role in STAFF:
        return True
    if role is Role.REVIEWER:
        return queue_id is not None and queue_id in queue_ids
    if role is Role.AGENT:
        return owner_id is not None and owner_id == actor_id
    return False


def sees_target(role: Role, queue_ids: frozenset[str], target: Target) -> bool:
    """Which targets a viewer may read: staff all; reviewers those whose approvals come to
    one of their queues (the target's queue or a queue its approval policy names); agents
    those they may propose to (the active ones). Integrations none."""
    if role in STAFF:
        return True
    if role is Role.REVIEWER:
        return not queues_of(target).isdisjoint(queue_ids)
    return role is Role.AGENT and target.is_active


def queues_of(target: Target) -> frozenset[str]:
    """The queues a target's approvals may be asked in: its own, and those its approval
    policy's rules and default name."""
    policy = target.approval_policy or {}
    entries = [*policy.get("rules", []), policy.get("default") or {}]
    named = {entry.get("queueId") for entry in entries}
    return frozenset(queue for queue in (target.queue_id, *named) if queue is not None)


def sees_target_url(role: Role) -> bool:
    """Only staff read where a target delivers: a URL may name internal hosts, and one
    stored before URLs were checked may carry credentials."""
    return role in STAFF


def sees_now_in(role: Role, queue_ids: frozenset[str], queue_id: str | None) -> bool:
    """Whether what the viewer was shown may still be shown, now in ``queue_id``: a
    reviewer's sight is bounded by queue (an escalated task leaves it); other roles' is not."""
    return role is not Role.REVIEWER or sees(
        role, queue_ids, None, queue_id=queue_id, owner_id=None
    )


@dataclass(frozen=True)
class Viewer:
    """An authenticated actor with the queues it belongs to, and when the credential it
    was read from ends by itself (an identity provider's access token's ``exp``, in
    seconds since the epoch; ``None``: it lasts until revoked)."""

    actor: Actor
    queue_ids: frozenset[str]
    expires_at: float | None = None

    @property
    def id(self) -> str:
        return self.actor.id

    @property
    def role(self) -> Role:
        return Role(self.actor.role)

    @property
    def sees_everything(self) -> bool:
        return self.role in STAFF

    def sees(self, *, queue_id: str | None, owner_id: str | None) -> bool:
        """Whether the viewer may read an object in ``queue_id`` made by ``owner_id``."""
        return sees(self.role, self.queue_ids, self.id, queue_id=queue_id, owner_id=owner_id)

    def sees_target(self, target: Target) -> bool:
        """Whether the viewer may read ``target`` (``sees_target``)."""
        return sees_target(self.role, self.queue_ids, target)

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
