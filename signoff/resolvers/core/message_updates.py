"""Keeping posted Slack messages true (docs/design.md section 5.6): whenever a proposal
moves, by any path, each Slack message that shows it gets a notification of its own that
brings it up to date (``message.updated``, sent with ``chat.update``).

It is written in the transaction of the move, as the change event is, so it is never lost
to a restart and never sent for a move that rolled back; it is sent and retried as every
notification is. What the update shows is read when it is sent, so updates that overtake
one another still leave the message as the proposal is.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from signoff.models import (
    ChannelKind,
    HumanTask,
    Notification,
    NotificationChannel,
    NotificationState,
    Proposal,
    ProposalState,
)
from signoff.models.notification import MESSAGE_UPDATE_EVENT, POSTING_EVENTS
from signoff.models.records import RecordSelect, one_of, table_of
from signoff.resolvers.core.work import UnitOfWork

HOOK_KEY = "slack-message-updates"
# Moves a message does not show: a delivery attempt starting, its lease renewed, a retry
# scheduled (the message says "approved" until delivery ends either way).
_UNSHOWN = frozenset({ProposalState.APPLYING})
# A post claimed or sent: one still pending is rendered as the proposal is when it goes.
_POSTED = (NotificationState.SENDING.value, NotificationState.SENT.value)


def keep_messages_true(work: UnitOfWork, proposal: Proposal) -> None:
    """Have the proposal's Slack messages updated as this transaction commits."""
    # Version 1 is a proposal this transaction has just created (every move adds one to the
    # version): no message shows it yet, since its posts go out after this commit.
    if (
        proposal.version == 1
        or proposal.state in _UNSHOWN
        or (proposal.state == ProposalState.FAILED and not proposal.delivery_terminal)
    ):
        return
    work.moved_proposals.add(proposal.id)
    work.read_at_commit(
        HOOK_KEY,
        lambda: _posts_of_moved(work),
        lambda posts: write_message_updates(work, posts),
    )


def _posts_of_moved(work: UnitOfWork) -> RecordSelect:
    """The look for the posted Slack messages of the proposals that moved in ``work``."""
    moved, work.moved_proposals = work.moved_proposals, set()
    parameters = {
        "proposals": sorted(moved),
        "kind": ChannelKind.SLACK_APP.value,
        "events": sorted(POSTING_EVENTS),
        "states": list(_POSTED),
    }
    return RecordSelect(Notification, "slack-posts", _posts_select, parameters)


async def write_message_updates(work: UnitOfWork, posts: list[Notification]) -> int:
    """Write one ``message.updated`` notification per posted Slack message (``posts``) of
    the proposals that moved in ``work``; returns how many."""
    now = work.now()
    written = [
        Notification(
            channel_id=post.channel_id,
            queue_id=post.queue_id,
            task_id=post.task_id,
            event=MESSAGE_UPDATE_EVENT,
            body={"update_of": post.id},
            next_attempt_at=now,
            created_at=now,
        )
        for post in posts
    ]
    if not written:
        return 0
    work.session.add_all(written)
    await work.session.flush()
    for notification in written:
        work.schedule_notification(notification.id, 1)
    return len(written)


def _posts_select(dialect: str) -> sa.Select[Any]:
    """The posted Slack messages of the proposals moved: built and compiled once, read
    without the ORM (the look is made by every move of a proposal)."""
    notifications = table_of(Notification)
    channels = table_of(NotificationChannel)
    tasks = table_of(HumanTask)
    return (
        sa.select(
            notifications.c.id,
            notifications.c.channel_id,
            notifications.c.queue_id,
            notifications.c.task_id,
        )
        .join(channels, channels.c.id == notifications.c.channel_id)
        .join(tasks, tasks.c.id == notifications.c.task_id)
        .where(
            one_of(tasks.c.proposal_id, "proposals", dialect),
            channels.c.kind == sa.bindparam("kind", type_=sa.String),
            one_of(notifications.c.event, "events", dialect),
            one_of(notifications.c.state, "states", dialect),
        )
    )
