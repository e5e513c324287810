"""Adding a queue's notification channels (docs/design.md section 5.6)."""

from __future__ import annotations

from dataclasses import dataclass

from signoff.constants import APPROVAL_LINK_TTL_MAX_SECONDS, APPROVAL_LINK_TTL_MIN_SECONDS
from signoff.errors import NotFound, ValidationFailed
from signoff.models import Actor, ChannelKind, NotificationChannel, Queue, QueueMembership, Role
from signoff.resolvers.access import Viewer, require_role
from signoff.resolvers.targets import check_url, new_signing_secret
from signoff.resolvers.transitions import Happening, record
from signoff.resolvers.work import UnitOfWork
from signoff.validation import require_range


@dataclass(frozen=True)
class AddedChannel:
    channel: NotificationChannel
    signing_secret: str | None  # WEBHOOK channels: shown here once


async def add_notification_channel(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    queue_id: str,
    kind: ChannelKind,
    url: str,
    include_payload: bool = False,
    reviewer_id: str | None = None,
    link_ttl_seconds: int | None = None,
) -> AddedChannel:
    """Add a channel to a queue (operators and admins); a WEBHOOK channel's signing secret
    is returned here once and never again. A channel addressed to one reviewer of the
    queue may carry approval links for them, valid ``link_ttl_seconds``."""
    require_role(viewer, Role.OPERATOR)
    if await work.session.get(Queue, queue_id) is None:
        raise NotFound("No such queue.", field="queueId")
    if reviewer_id is not None:
        await _require_queue_reviewer(work, queue_id, reviewer_id)
    if link_ttl_seconds is not None:
        if reviewer_id is None:
            raise ValidationFailed(
                "Approval links go only to a channel addressed to one reviewer: give reviewerId.",
                field="approvalLinkTtlSeconds",
            )
        require_range(
            link_ttl_seconds,
            "approvalLinkTtlSeconds",
            APPROVAL_LINK_TTL_MIN_SECONDS,
            APPROVAL_LINK_TTL_MAX_SECONDS,
            APPROVAL_LINK_TTL_MAX_SECONDS,
        )
    secret = new_signing_secret() if kind is ChannelKind.WEBHOOK else None
    channel = NotificationChannel(
        queue_id=queue_id,
        kind=kind,
        url=check_url(url),
        signing_secret=None if secret is None else work.sealer.seal(secret),
        include_payload=include_payload,
        reviewer_id=reviewer_id,
        link_ttl_seconds=link_ttl_seconds,
        created_by_id=viewer.id,
    )
    work.session.add(channel)
    await work.session.flush()
    record(
        work,
        Happening(
            entity_type="queue",
            entity_id=queue_id,
            actor_id=viewer.id,
            action="queue.notification_channel_added",
            details={
                "channel_id": channel.id,
                "kind": kind.value,
                "url": channel.url,
                "include_payload": include_payload,
                "reviewer_id": reviewer_id,
                "link_ttl_seconds": link_ttl_seconds,
            },
        ),
    )
    await work.commit()
    return AddedChannel(channel, secret)


async def _require_queue_reviewer(work: UnitOfWork, queue_id: str, reviewer_id: str) -> None:
    actor = await work.session.get(Actor, reviewer_id)
    if actor is None:
        raise NotFound("No such actor.", field="reviewerId")
    member = await work.session.get(QueueMembership, (queue_id, reviewer_id))
    if actor.role != Role.REVIEWER or member is None:
        raise ValidationFailed(
            "The channel's reviewer must be a reviewer of the queue.", field="reviewerId"
        )
