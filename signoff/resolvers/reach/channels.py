"""A queue's notification channels (docs/design.md section 5.6): adding one, disabling,
enabling and removing it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import update
from sqlmodel import col, select

from signoff.constants import (
    APPROVAL_LINK_TTL_MAX_SECONDS,
    APPROVAL_LINK_TTL_MIN_SECONDS,
    CHANNEL_DISABLED_CODE,
    CHANNEL_REMOVED_CODE,
)
from signoff.errors import NotificationChannelRemoved, ValidationFailed
from signoff.models import (
    Actor,
    ChannelKind,
    Notification,
    NotificationChannel,
    NotificationState,
    Queue,
    QueueMembership,
    Role,
)
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import NOTIFICATION
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.targets.targets import check_url, iso, new_signing_secret
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
    await require_row(work.session, Queue, queue_id, "No such queue.", field="queueId")
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
    actor = await require_row(
        work.session, Actor, reviewer_id, "No such actor.", field="reviewerId"
    )
    member = await work.session.get(QueueMembership, (queue_id, reviewer_id))
    if actor.role != Role.REVIEWER or member is None:
        raise ValidationFailed(
            "The channel's reviewer must be a reviewer of the queue.", field="reviewerId"
        )


@dataclass(frozen=True)
class Switch:
    """One way to switch a channel: the row it applies to, what it sets, what it audits,
    and the error code its cancelled notifications keep (``None``: it cancels none)."""

    action: str
    applies: Any  # a condition on the channel's row
    values: Callable[[datetime], dict[str, Any]]  # the columns set, given now
    cancels_as: str | None


_DISABLED, _REMOVED = col(NotificationChannel.disabled_at), col(NotificationChannel.removed_at)
DISABLE = Switch(
    "queue.notification_channel_disabled",
    sa.and_(_DISABLED.is_(None), _REMOVED.is_(None)),
    lambda now: {"disabled_at": now},
    CHANNEL_DISABLED_CODE,
)
ENABLE = Switch(
    "queue.notification_channel_enabled",
    sa.and_(_DISABLED.is_not(None), _REMOVED.is_(None)),
    lambda now: {"disabled_at": None},
    None,
)
REMOVE = Switch(
    "queue.notification_channel_removed",
    _REMOVED.is_(None),
    lambda now: {"removed_at": now},
    CHANNEL_REMOVED_CODE,
)


async def disable_notification_channel(
    *, work: UnitOfWork, viewer: Viewer, channel_id: str
) -> NotificationChannel:
    """Stop a channel's notifications until it is enabled (operators and admins): it gets
    no new ones, and those waiting for it are cancelled. A disabled channel is answered
    as it is, with nothing written."""
    return await _switch(work, viewer, channel_id, DISABLE)


async def enable_notification_channel(
    *, work: UnitOfWork, viewer: Viewer, channel_id: str
) -> NotificationChannel:
    """Let a disabled channel get new notifications again (those cancelled stay so)."""
    return await _switch(work, viewer, channel_id, ENABLE)


async def remove_notification_channel(
    *, work: UnitOfWork, viewer: Viewer, channel_id: str
) -> NotificationChannel:
    """Remove a channel for good, as disabling does but with no way back; its row stays,
    as its notifications name it. Removing it again is refused
    (``NOTIFICATION_CHANNEL_REMOVED``), like revoking a revoked approval link."""
    return await _switch(work, viewer, channel_id, REMOVE)


async def _switch(
    work: UnitOfWork, viewer: Viewer, channel_id: str, switch: Switch
) -> NotificationChannel:
    """One conditional UPDATE: of two callers at once, one changes the channel and writes
    its audit row; the other (PostgreSQL re-checks the condition on the locked row) finds
    it done and writes nothing, or is refused if it was removed."""
    require_role(viewer, Role.OPERATOR)
    await _channel(work, channel_id)  # NOT_FOUND before anything is written
    now = work.now()
    statement = (
        update(NotificationChannel)
        .where(col(NotificationChannel.id) == channel_id, switch.applies)
        .values(**switch.values(now))
        .returning(NotificationChannel)
        .execution_options(populate_existing=True)
    )
    switched: NotificationChannel | None = (await work.session.exec(statement)).scalars().first()
    if switched is None:
        current = await _current(work, channel_id)
        if current.removed_at is not None:
            removed_at = iso(current.removed_at)  # read before the rollback expires it
            await work.rollback()
            raise NotificationChannelRemoved(
                "The notification channel was removed; add a new one instead.",
                removedAt=removed_at,
            )
        return current
    cancelled = 0
    if switch.cancels_as is not None:
        cancelled = await _cancel_waiting(work, viewer, channel_id, switch.cancels_as)
    record(
        work,
        Happening(
            entity_type="queue",
            entity_id=switched.queue_id,
            actor_id=viewer.id,
            action=switch.action,
            details={"channel_id": switched.id, "cancelled_notifications": cancelled},
        ),
    )
    await work.commit()
    return switched


async def _channel(work: UnitOfWork, channel_id: str) -> NotificationChannel:
    channel = await require_row(
        work.session,
        NotificationChannel,
        channel_id,
        "No such notification channel.",
        field="channelId",
    )
    return channel


async def _current(work: UnitOfWork, channel_id: str) -> NotificationChannel:
    statement = (
        select(NotificationChannel)
        .where(col(NotificationChannel.id) == channel_id)
        .execution_options(populate_existing=True)
    )
    channel: NotificationChannel = (await work.session.exec(statement)).one()
    return channel


async def _cancel_waiting(
    work: UnitOfWork, viewer: Viewer, channel_id: str, error_code: str
) -> int:
    """Cancel the channel's notifications not yet sent, each audited
    ``notification.cancelled``; one in flight is left to its sender (a retry it schedules
    is cancelled when claimed)."""
    waiting = col(Notification.state) == NotificationState.PENDING.value
    cancelled = await NOTIFICATION.move_where(
        work,
        lifecycles.CANCEL_SENDING,
        col(Notification.channel_id) == channel_id,
        actor_id=viewer.id,
        guard=waiting,
        values={"next_attempt_at": None, "last_error_code": error_code},
        details={"error_code": error_code},
    )
    return len(cancelled)
