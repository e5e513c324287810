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
        description="WEBHOOK: a signed JSON document. SLACK: a Slack incoming-webhook message."
    )
    url: str
    include_payload: bool = strawberry.field(
        default=False, description="Send the proposal's payload too (default: never)."
    )


@strawberry.type(description="Where a queue's notifications go.")
class NotificationChannel(Node):
    id: strawberry.ID
    kind: models.ChannelKind
    url: str
    include_payload: bool
    created_at: datetime

    @classmethod
    def from_model(cls, channel: models.NotificationChannel) -> NotificationChannel:
        return cls(
            id=strawberry.ID(channel.id),
            kind=models.ChannelKind(channel.kind),
            url=channel.url,
            include_payload=channel.include_payload,
            created_at=channel.created_at,
        )


@strawberry.type
class AddNotificationChannelPayload:
    channel: NotificationChannel
    signing_secret: str | None = strawberry.field(
        description="WEBHOOK channels: verify notifications with it. Shown only here, once."
    )
