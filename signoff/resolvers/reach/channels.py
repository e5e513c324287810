"""A queue's notification channels (docs/design.md section 5.6): adding one, listing,
disabling, enabling and removing them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

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
from signoff.resolvers.core.reach_lifecycles import (
    CHANNEL_PRESENCE,
    CHANNEL_SWITCH,
    REMOVE_CHANNEL,
    SWITCH_OFF,
    SWITCH_ON,
)
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.transitions import Edge, Happening, Lifecycle, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.reach.emails import email_url
from signoff.resolvers.reach.slack_messages import slack_channel_url
from signoff.resolvers.targets.targets import check_url, iso, new_signing_secret
from signoff.validation import require_range

HTTP_KINDS = (ChannelKind.WEBHOOK, ChannelKind.SLACK)
SLACK_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{2,31}")
# One @, no spaces or angle brackets: the server finds out the rest.
EMAIL_ADDRESS = re.compile(r"[^@\s<>]{1,64}@[^@\s<>]{1,255}")


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
    url: str | None = None,
    include_payload: bool = False,
    reviewer_id: str | None = None,
    link_ttl_seconds: int | None = None,
    slack_channel: str | None = None,
    email_address: str | None = None,
) -> AddedChannel:
    """Add a channel to a queue (operators and admins); a WEBHOOK channel's signing secret
    is returned here once and never again. A channel addressed to one reviewer of the
    queue may carry approval links for them, valid ``link_ttl_seconds``. A SLACK_APP
    channel posts to ``slack_channel`` with the Slack app's bot token, sealed into it; an
    EMAIL channel mails its reviewer at ``email_address``."""
    require_role(viewer, Role.OPERATOR)
    await require_row(work.session, Queue, queue_id, "No such queue.", field="queueId")
    url = _address(kind, url, slack_channel, email_address, reviewer_id)
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
    sealed = secret if kind is ChannelKind.WEBHOOK else _bot_token(work, kind)
    channel = NotificationChannel(
        queue_id=queue_id,
        kind=kind,
        # Deliveries by HTTP meet the destination policy; a Slack app's channel or a mail
        # address is no URL anything connects to.
        url=check_url(url, work.services.destinations) if kind in HTTP_KINDS else url,
        signing_secret=None if sealed is None else work.sealer.seal(sealed),
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


def _address(
    kind: ChannelKind,
    url: str | None,
    slack_channel: str | None,
    email_address: str | None,
    reviewer_id: str | None,
) -> str:
    """Where the channel sends, as stored in ``url``; each kind takes exactly its own field."""
    given = {"url": url, "slackChannel": slack_channel, "emailAddress": email_address}
    wanted = {
        ChannelKind.SLACK_APP: "slackChannel",
        ChannelKind.EMAIL: "emailAddress",
    }.get(kind, "url")
    for field, value in given.items():
        if (value is None) != (field != wanted):
            raise ValidationFailed(
                f"A {kind.value} channel takes {wanted} and nothing else of url, slackChannel, "
                "emailAddress.",
                field=field,
            )
    if kind is ChannelKind.SLACK_APP:
        assert slack_channel is not None
        if not SLACK_CHANNEL_ID.fullmatch(slack_channel):
            raise ValidationFailed(
                "slackChannel is a Slack channel id such as C0123456789.", field="slackChannel"
            )
        return slack_channel_url(slack_channel)
    if kind is ChannelKind.EMAIL:
        assert email_address is not None
        if reviewer_id is None:
            raise ValidationFailed(
                "Mail goes to one reviewer, with their approval link: give reviewerId.",
                field="reviewerId",
            )
        if not EMAIL_ADDRESS.fullmatch(email_address):
            raise ValidationFailed("emailAddress is not a mail address.", field="emailAddress")
        return email_url(email_address)
    assert url is not None
    return url  # checked with the destination policy as the channel is made


def _bot_token(work: UnitOfWork, kind: ChannelKind) -> str | None:
    """The Slack app's bot token for a SLACK_APP channel (sealed into it as it is added)."""
    if kind is not ChannelKind.SLACK_APP:
        return None
    token = work.services.slack_bot_token
    if token is None:
        raise ValidationFailed(
            "The Slack app is not configured: set SIGNOFF_SLACK_BOT_TOKEN.", field="kind"
        )
    return token


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
    """One way to switch a channel: its move, what it audits, and the error code its
    cancelled notifications keep (``None``: it cancels none)."""

    action: str
    lifecycle: Lifecycle[NotificationChannel, Any]
    edge: Edge[Any]
    cancels_as: str | None


_LISTED = col(NotificationChannel.removed_at).is_(None)
DISABLE = Switch(
    "queue.notification_channel_disabled", CHANNEL_SWITCH, SWITCH_OFF, CHANNEL_DISABLED_CODE
)
ENABLE = Switch("queue.notification_channel_enabled", CHANNEL_SWITCH, SWITCH_ON, None)
REMOVE = Switch(
    "queue.notification_channel_removed", CHANNEL_PRESENCE, REMOVE_CHANNEL, CHANNEL_REMOVED_CODE
)


async def list_notification_channels(
    *, session: AsyncSession, viewer: Viewer, queue_id: str, removed: bool = False
) -> list[NotificationChannel]:
    """Operators and admins: a queue's channels, oldest first; removed ones only if asked."""
    require_role(viewer, Role.OPERATOR)
    await require_row(session, Queue, queue_id, "No such queue.", field="queueId")
    stmt = (
        select(NotificationChannel)
        .where(col(NotificationChannel.queue_id) == queue_id)
        .order_by(col(NotificationChannel.created_at), col(NotificationChannel.id))
    )
    if not removed:
        stmt = stmt.where(col(NotificationChannel.removed_at).is_(None))
    return list((await session.exec(stmt)).all())


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
    switched = await switch.lifecycle.move(
        work,
        switch.edge,
        channel_id,
        actor_id=viewer.id,
        guard=None if switch.lifecycle is CHANNEL_PRESENCE else _LISTED,
    )
    if switched is None:
        current = await switch.lifecycle.reread(work, channel_id)
        if current.removed_at is not None:
            raise NotificationChannelRemoved(
                "The notification channel was removed; add a new one instead.",
                removedAt=iso(current.removed_at),
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


async def _cancel_waiting(
    work: UnitOfWork, viewer: Viewer, channel_id: str, error_code: str
) -> int:
    """Cancel the channel's notifications not yet sent, each audited
    ``notification.cancelled``; one in flight is left to its sender (a retry it schedules
    is cancelled when claimed, a last failure opens no incident)."""
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
