"""Adding a queue's notification channels (docs/design.md section 5.6)."""

from __future__ import annotations

from dataclasses import dataclass

from signoff.errors import NotFound
from signoff.models import ChannelKind, NotificationChannel, Queue, Role
from signoff.resolvers.access import Viewer, require_role
from signoff.resolvers.targets import check_url, new_signing_secret
from signoff.resolvers.transitions import Happening, record
from signoff.resolvers.work import UnitOfWork


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
) -> AddedChannel:
    """Add a channel to a queue (operators and admins); a WEBHOOK channel's signing secret
    is returned here once and never again."""
    require_role(viewer, Role.OPERATOR)
    if await work.session.get(Queue, queue_id) is None:
        raise NotFound("No such queue.", field="queueId")
    secret = new_signing_secret() if kind is ChannelKind.WEBHOOK else None
    channel = NotificationChannel(
        queue_id=queue_id,
        kind=kind,
        url=check_url(url),
        signing_secret=None if secret is None else work.sealer.seal(secret),
        include_payload=include_payload,
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
            },
        ),
    )
    await work.commit()
    return AddedChannel(channel, secret)
