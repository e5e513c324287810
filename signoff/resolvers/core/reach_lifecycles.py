"""Lifecycles of how a queue reaches its reviewers: a notification channel's switch and its
removal, and a reviewer's delegation.

Their audit records are the queue's and the reviewer's (``queue.notification_channel_*``,
``actor.delegate_*``), written by the operations with what they did besides the move (the
notifications a switch cancelled), so these edges write none of their own; none of them
is in the change feed.
"""

from __future__ import annotations

from signoff.models import (
    ChannelPresence,
    ChannelSwitch,
    Delegation,
    DelegationState,
    NotificationChannel,
)
from signoff.resolvers.core.transitions import Edge, Lifecycle, Stamp, Subject
from signoff.resolvers.core.work import UnitOfWork

SWITCH_OFF = Edge.of("switch_off", [ChannelSwitch.ON], ChannelSwitch.OFF, None, None)
SWITCH_ON = Edge.of("switch_on", [ChannelSwitch.OFF], ChannelSwitch.ON, None, None)
REMOVE_CHANNEL = Edge.of(
    "remove_channel", [ChannelPresence.LISTED], ChannelPresence.REMOVED, None, None
)
# Cleared by the reviewer, or replaced when they name another delegate.
REVOKE_DELEGATION = Edge.of(
    "revoke_delegation", [DelegationState.STANDING], DelegationState.REVOKED, None, None
)


async def describe_channel(_: UnitOfWork, channel: NotificationChannel) -> Subject:
    return Subject(queue_id=channel.queue_id, proposal_id=None, snapshot={})


async def describe_delegation(_: UnitOfWork, delegation: Delegation) -> Subject:
    return Subject(queue_id=None, proposal_id=None, snapshot={})


CHANNEL_SWITCH: Lifecycle[NotificationChannel, ChannelSwitch] = Lifecycle(
    "notification_channel",
    NotificationChannel,
    [SWITCH_OFF, SWITCH_ON],
    describe=describe_channel,
    state_field="disabled_at",
    stamp=Stamp(ChannelSwitch.ON, ChannelSwitch.OFF),
)
CHANNEL_PRESENCE: Lifecycle[NotificationChannel, ChannelPresence] = Lifecycle(
    "notification_channel",
    NotificationChannel,
    [REMOVE_CHANNEL],
    describe=describe_channel,
    state_field="removed_at",
    stamp=Stamp(ChannelPresence.LISTED, ChannelPresence.REMOVED),
)
DELEGATION: Lifecycle[Delegation, DelegationState] = Lifecycle(
    "delegation",
    Delegation,
    [REVOKE_DELEGATION],
    describe=describe_delegation,
    state_field="revoked_at",
    stamp=Stamp(DelegationState.STANDING, DelegationState.REVOKED),
)
