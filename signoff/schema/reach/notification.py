"""Queue notification channels in GraphQL."""

from __future__ import annotations

from datetime import datetime

import strawberry

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.schema.node import Node


@strawberry.input
class AddNotificationChannelInput:
    queue_id: strawberry.ID
    kind: models.ChannelKind = strawberry.field(
        description="WEBHOOK: a signed JSON document. SLACK: a Slack incoming-webhook message. "
        "SLACK_APP: a message from Signoff's Slack app with Approve and Reject, kept up to "
        "date. EMAIL: a mail to the channel's reviewer with their single-use approval link."
    )
    url: str | None = strawberry.field(
        default=None, description="WEBHOOK and SLACK channels: where to post."
    )
    slack_channel: str | None = strawberry.field(
        default=None,
        description="SLACK_APP channels: the Slack channel id (C…) the app posts in.",
    )
    email_address: str | None = strawberry.field(
        default=None, description="EMAIL channels: the reviewer's mail address."
    )
    include_payload: bool = strawberry.field(
        default=False, description="Send the proposal's payload too (default: never)."
    )
    reviewer_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="Address the channel to one reviewer of the queue (a personal Slack "
        "webhook, a mail relay for one person); needed for approval links.",
    )
    approval_link_ttl_seconds: int | None = strawberry.field(
        default=None,
        description="Put a single-use approval link for the channel's reviewer in each "
        "notification of an approval task, valid this long (60 s to 72 h; never past the "
        "proposal's deadline). Default: no links.",
    )


@strawberry.input
class DisableNotificationChannelInput:
    channel_id: strawberry.ID


@strawberry.input
class EnableNotificationChannelInput:
    channel_id: strawberry.ID


@strawberry.input
class RemoveNotificationChannelInput:
    channel_id: strawberry.ID


@strawberry.type(description="Where a queue's notifications go.")
class NotificationChannel(Node):
    id: strawberry.ID
    kind: models.ChannelKind
    url: str
    include_payload: bool
    reviewer_id: strawberry.ID | None = strawberry.field(
        description="The one reviewer this channel is addressed to, if any."
    )
    approval_link_ttl_seconds: int | None = strawberry.field(
        description="Notifications carry an approval link for the reviewer, valid this long."
    )
    created_at: datetime
    disabled: bool = strawberry.field(
        description="Gets no notifications: disabled (until enabled again) or removed."
    )
    disabled_at: datetime | None = strawberry.field(
        description="When it was disabled, while it is; null once enabled again."
    )
    removed_at: datetime | None = strawberry.field(
        description="When it was removed for good; kept, as its notifications name it."
    )

    @classmethod
    def from_model(cls, channel: models.NotificationChannel) -> NotificationChannel:
        return cls(
            id=strawberry.ID(channel.id),
            kind=models.ChannelKind(channel.kind),
            url=channel.url,
            include_payload=channel.include_payload,
            reviewer_id=None if channel.reviewer_id is None else strawberry.ID(channel.reviewer_id),
            approval_link_ttl_seconds=channel.link_ttl_seconds,
            created_at=channel.created_at,
            disabled=not channel.receives,
            disabled_at=channel.disabled_at,
            removed_at=channel.removed_at,
        )


@strawberry.type
class AddNotificationChannelPayload:
    channel: NotificationChannel
    signing_secret: str | None = strawberry.field(
        description="WEBHOOK channels: verify notifications with it. Shown only here, once."
    )
