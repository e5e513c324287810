"""Notification channels of a queue, and the notifications waiting to be sent to them."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.base import (
    VERSIONED,
    enum_field,
    fk_field,
    id_field,
    json_field,
    time_field,
    version_field,
)


class ChannelKind(StrEnum):
    WEBHOOK = "WEBHOOK"  # a JSON document signed like deliveries (Standard Webhooks)
    SLACK = "SLACK"  # a Slack-compatible incoming webhook: {"text": ...}
    # A message posted by Signoff's Slack app (the Web API), with buttons to decide, kept
    # true as the proposal moves (docs/design.md section 5.6).
    SLACK_APP = "SLACK_APP"
    EMAIL = "EMAIL"  # a mail to the channel's reviewer, with a single-use approval link


# The notification that brings a posted Slack message up to date with its proposal.
MESSAGE_UPDATE_EVENT = "message.updated"
# The notifications that post a message of their own (a reminder replies in its thread).
POSTING_EVENTS = ("task.created", "task.escalated")


class NotificationState(StrEnum):
    PENDING = "PENDING"  # waiting for its next attempt (``next_attempt_at``)
    SENDING = "SENDING"  # an attempt is in flight (until ``lease_expires_at``)
    SENT = "SENT"
    FAILED = "FAILED"  # gave up: an incident tells the operators
    CANCELLED = "CANCELLED"  # never sent: its channel was disabled or removed first


class ChannelSwitch(StrEnum):
    """Whether a channel gets notifications; stored as ``disabled_at``."""

    ON = "ON"
    OFF = "OFF"


class ChannelPresence(StrEnum):
    """Whether a channel is still the queue's; stored as ``removed_at`` (for good)."""

    LISTED = "LISTED"
    REMOVED = "REMOVED"


class NotificationChannel(SQLModel, table=True):
    __tablename__ = "notification_channels"

    id: str = id_field()
    queue_id: str = fk_field("queues.id")
    kind: ChannelKind = enum_field()
    # WEBHOOK and SLACK: where to post. SLACK_APP: ``slack://channel?id=<C…>``; EMAIL:
    # ``mailto:<address>``.
    url: str = Field(sa_column=sa.Column(sa.String(2048), nullable=False))
    # WEBHOOK channels: the ``whsec_`` secret; SLACK_APP channels: the bot token they post
    # with. Sealed like a target's.
    signing_secret: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(128), nullable=True)
    )
    # Whether notifications carry the proposal's payload; by default they never do.
    include_payload: bool = False
    # A channel addressed to one reviewer (a personal Slack webhook, a mail relay for one
    # person); only such a channel may carry approval links, and only for that reviewer.
    reviewer_id: str | None = fk_field("actors.id", nullable=True, index=False)
    # Set: each notification of an approval task carries a single-use approval link for
    # ``reviewer_id``, made when it is sent and valid this long (docs/design.md section 5.6).
    link_ttl_seconds: int | None = None
    created_by_id: str = fk_field("actors.id", index=False)
    created_at: datetime = time_field(default_now=True)
    # Set: the channel gets no notifications until it is enabled again.
    disabled_at: datetime | None = time_field(nullable=True)
    # Set: removed for good. The row stays, as its notifications and links name it.
    removed_at: datetime | None = time_field(nullable=True)

    @property
    def receives(self) -> bool:
        """Whether the channel gets notifications: neither disabled nor removed."""
        return self.disabled_at is None and self.removed_at is None


class Notification(SQLModel, table=True):
    __tablename__ = "notifications"
    __table_args__ = (sa.Index("ix_notifications_due", "state", "next_attempt_at"),)
    __mapper_args__ = VERSIONED

    id: str = id_field()
    channel_id: str = fk_field("notification_channels.id")
    queue_id: str = fk_field("queues.id", index=False)
    task_id: str = fk_field("human_tasks.id", index=False)
    event: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    body: dict[str, Any] = json_field(default={})
    state: NotificationState = enum_field(NotificationState.PENDING)
    version: int = version_field()
    attempt_count: int = 0
    next_attempt_at: datetime | None = time_field(nullable=True)
    lease_expires_at: datetime | None = time_field(nullable=True)
    last_error_code: str | None = Field(default=None, sa_column=sa.Column(sa.String(64)))
    created_at: datetime = time_field(default_now=True)
    sent_at: datetime | None = time_field(nullable=True)
    # SLACK_APP posts: where the message went, once Slack has it (``chat.update`` names it).
    slack_channel: str | None = Field(default=None, sa_column=sa.Column(sa.String(32)))
    slack_ts: str | None = Field(default=None, sa_column=sa.Column(sa.String(32)))
