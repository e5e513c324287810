"""Queue notifications (docs/design.md section 5.6): a queue's channels hear when a task
enters the queue, is due soon or escalates to it.

A notification is an outbox row written with the change it reports, so nothing is sent
for a change that rolled back. It is sent after commit (and by a periodic sweep) with no
transaction open; an approval link's token lives only in memory and in the request sent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select

from signoff.constants import (
    CHANNEL_DISABLED_CODE,
    CHANNEL_REMOVED_CODE,
    EMAIL_LINK_TTL_SECONDS,
    NOTIFICATION_BATCH_SIZE,
    NOTIFICATION_INCIDENT_FINGERPRINT,
    NOTIFICATION_LEASE_SECONDS,
    NOTIFICATION_MAX_ATTEMPTS,
)
from signoff.delivery import Jitter, backoff_seconds
from signoff.models import (
    Actor,
    ChannelKind,
    HumanTask,
    Notification,
    NotificationChannel,
    NotificationState,
    Queue,
    Severity,
)
from signoff.models.proposal import format_expiry
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import NOTIFICATION
from signoff.resolvers.core.occurrences import announce_occurrence, upsert_incident
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.reach.emails import mail, plain_mail
from signoff.resolvers.reach.link_minting import CreatedLink, link_for_notification
from signoff.resolvers.reach.slack_messages import ShownCache, mrkdwn, slack_request

NOTIFICATION_SCHEMA_VERSION = 1
HEADLINES = {
    "task.created": "New task",
    "task.due_soon": "Due soon",
    "task.escalated": "Escalated to this queue",
}
LINK_LABEL = "Review and decide"
MAIL_FROM = "signoff@localhost"


# A channel gets notifications unless it was disabled or removed.
RECEIVING = sa.and_(
    col(NotificationChannel.disabled_at).is_(None), col(NotificationChannel.removed_at).is_(None)
)
# Built once, as every new task reads its queue's channels.
_CHANNELS = select(NotificationChannel).where(
    NotificationChannel.queue_id == sa.bindparam("queue_id"), RECEIVING
)


async def notify(
    work: UnitOfWork, task: HumanTask, event: str, *, any_channels: bool | None = None
) -> int:
    """Write a notification of ``event`` about ``task`` for each channel of its queue that
    receives, in ``work``'s transaction; returns how many. ``any_channels``: whether the
    queue has any that receive,
    when the caller read that already in the transaction (``None``: not known)."""
    if any_channels is False:
        return 0
    channels = (await work.session.exec(_CHANNELS, params={"queue_id": task.queue_id})).all()
    if not channels:
        return 0
    queue = await work.session.get(Queue, task.queue_id)
    assert queue is not None  # tasks reference their queue
    now = work.now()
    written = [
        Notification(
            channel_id=channel.id,
            queue_id=queue.id,
            task_id=task.id,
            event=event,
            body=notification_body(channel, queue, task, event),
            next_attempt_at=now,
            created_at=now,
        )
        for channel in channels
    ]
    work.session.add_all(written)
    await work.session.flush()
    for notification in written:
        work.schedule_notification(notification.id, 1)
    return len(written)


def notification_body(
    channel: NotificationChannel, queue: Queue, task: HumanTask, event: str
) -> dict[str, Any]:
    """What a channel receives: a JSON document, or a Slack message (``{"text": ...}``)."""
    payload = task.context.get("payload") if channel.include_payload else None
    due = task.due_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    kind = ChannelKind(channel.kind)
    if kind in (ChannelKind.SLACK, ChannelKind.SLACK_APP, ChannelKind.EMAIL):
        # Slack reads its text as markup: what agents and operators wrote is escaped there
        # (mrkdwn), and shown as written in a mail.
        shown = str if kind is ChannelKind.EMAIL else mrkdwn
        headline = HEADLINES.get(event, event)
        text = f"[{shown(queue.name)}] {headline}: {shown(task.title)} (due {due})"
        if payload is not None:
            code = json.dumps(payload, sort_keys=True) if shown is str else slack_code(payload)
            text += f"\n```{code}```"
        return {"text": text}
    body: dict[str, Any] = {
        "schema_version": NOTIFICATION_SCHEMA_VERSION,
        "type": event,
        "queue": {"id": queue.id, "slug": queue.slug, "name": queue.name},
        "task": {"id": task.id, "kind": task.kind, "title": task.title, "due_at": due},
        "proposal_id": task.proposal_id,
        "payload_digest": task.context.get("payloadDigest"),
    }
    if payload is not None:
        body["payload"] = payload
    return body


def slack_code(document: Any) -> str:
    """A JSON document for a Slack code block it cannot leave: a backtick can only stand
    inside a JSON string, where ``\\u0060`` spells the same character, so no ``` ends
    the block early."""
    return mrkdwn(json.dumps(document, sort_keys=True).replace("`", "\\u0060"))


def with_link(
    kind: ChannelKind, body: dict[str, Any], url: str, expires_at: datetime, reviewer: Actor
) -> dict[str, Any]:
    """``body`` with an approval link: a field of the JSON document, or a Slack button (and
    the URL in the text, for clients that show no buttons)."""
    expires = expires_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    if kind is ChannelKind.SLACK:
        text, name = str(body["text"]), mrkdwn(reviewer.name)
        return {
            "text": f"{text}\n<{url}|{LINK_LABEL}> (once, as {name}, until {expires})",
            "blocks": [
                {"type": "section", "text": {"type": "mrkdwn", "text": text}},
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "text": {"type": "plain_text", "text": LINK_LABEL},
                            "url": url,
                        }
                    ],
                },
                {
                    "type": "context",
                    "elements": [
                        {
                            "type": "mrkdwn",
                            "text": f"Single use, as {name}, until {expires}. "
                            "Opening it decides nothing.",
                        }
                    ],
                },
            ],
        }
    return body | {
        "approval_link": {
            "url": url,
            "expires_at": expires,
            "reviewer": {"id": reviewer.id, "name": reviewer.name},
        }
    }


@dataclass(frozen=True)
class Outgoing:
    """One claimed notification, with what sending it needs (no database)."""

    id: str
    attempt: int
    channel_id: str
    kind: ChannelKind
    url: str
    secret: str | None  # WEBHOOK: the signing secret; SLACK_APP: the bot token
    body: dict[str, Any]  # as sent: with the approval link, if one was made


def _due(now: Any) -> Any:
    columns = Notification.__table__.c  # type: ignore[attr-defined]
    return sa.or_(
        sa.and_(columns.state == NotificationState.PENDING.value, columns.next_attempt_at <= now),
        sa.and_(columns.state == NotificationState.SENDING.value, columns.lease_expires_at <= now),
    )


async def claim_notifications(
    work: UnitOfWork,
    *,
    public_url: str,
    limit: int = NOTIFICATION_BATCH_SIZE,
    only: Sequence[str] | None = None,
    mail_from: str = MAIL_FROM,
) -> list[Outgoing]:
    """Take a lease on due notifications (and ones whose sender died), oldest first, or on
    those of ``only`` that are due, and commit; each attempt is counted as it is claimed,
    each approval link it carries is made (``public_url`` starts its URL), and Slack
    messages and mails are drawn from the proposal as it now is."""
    now = work.now()
    chosen = (
        select(Notification.id)
        .where(_due(now))
        .order_by(col(Notification.next_attempt_at), col(Notification.id))
        .limit(limit)
    )
    if only is not None:
        chosen = chosen.where(col(Notification.id).in_(list(only)))
    if work.session.get_bind().dialect.name == "postgresql":
        # Two senders claiming at once (the woken one and the sweep) take different rows
        # rather than lock the same ones in different orders, which could deadlock.
        chosen = chosen.with_for_update(skip_locked=True)
    claimed = await NOTIFICATION.move_where(
        work,
        lifecycles.START_SENDING,
        col(Notification.id).in_(chosen),
        actor_id=None,
        guard=_due(now),
        values={
            "attempt_count": col(Notification.attempt_count) + 1,
            "lease_expires_at": now + timedelta(seconds=NOTIFICATION_LEASE_SECONDS),
            "next_attempt_at": None,
        },
    )
    # An UPDATE returns its rows in no particular order: a channel's notifications are
    # sent in the order they were made (a task's "new" before its "due soon").
    claimed = sorted(claimed, key=lambda n: (n.created_at, n.id))
    channels = {
        channel.id: channel
        for channel in (
            await work.session.exec(
                select(NotificationChannel).where(
                    col(NotificationChannel.id).in_({n.channel_id for n in claimed})
                )
            )
        ).all()
    }
    for notification in claimed:
        if not channels[notification.channel_id].receives:
            await _cancel(work, notification, channels[notification.channel_id])
    outgoing, shown = [], ShownCache()
    for notification in claimed:
        channel = channels[notification.channel_id]
        if not channel.receives:
            continue
        kind = ChannelKind(channel.kind)
        link = await _link(work, notification, channel)
        body = await _body(work, notification, channel, link, public_url, mail_from, shown)
        outgoing.append(
            Outgoing(
                id=notification.id,
                attempt=notification.attempt_count,
                channel_id=channel.id,
                kind=kind,
                url=channel.url,
                secret=None
                if channel.signing_secret is None
                else work.sealer.open(channel.signing_secret),
                body=body,
            )
        )
    await work.commit()
    return outgoing


async def _body(
    work: UnitOfWork,
    notification: Notification,
    channel: NotificationChannel,
    link: CreatedLink | None,
    public_url: str,
    mail_from: str,
    cache: ShownCache,
) -> dict[str, Any]:
    """What this attempt sends: the outbox row's body (with its link), or for the Slack app
    and mail, a message drawn from the proposal as it is now."""
    kind, now = ChannelKind(channel.kind), work.now()
    if kind is ChannelKind.SLACK_APP:
        return await slack_request(work.session, notification, channel, public_url, now, cache)
    if kind is ChannelKind.EMAIL:
        shown = await cache.load(work.session, channel, notification.task_id, public_url, now)
        sent_link = (
            None if link is None else (public_url + link.path, format_expiry(link.link.expires_at))
        )
        if shown is None:
            return plain_mail(notification.event, channel, notification.body, mail_from)
        return mail(
            notification_id=notification.id,
            event=notification.event,
            channel=channel,
            shown=shown,
            link=sent_link,
            public_url=public_url,
            sender=mail_from,
        )
    if link is None:
        return notification.body
    reviewer = await work.session.get(Actor, link.link.reviewer_id)
    assert reviewer is not None
    return with_link(
        kind, notification.body, public_url + link.path, link.link.expires_at, reviewer
    )


async def _cancel(
    work: UnitOfWork, notification: Notification, channel: NotificationChannel
) -> None:
    """Cancel, unsent, a notification just claimed for a channel switched off since it was
    written (by a task's transaction that read the channel before, or as a retry scheduled
    by an attempt in flight then)."""
    error_code = CHANNEL_REMOVED_CODE if channel.removed_at is not None else CHANNEL_DISABLED_CODE
    await NOTIFICATION.move(
        work,
        lifecycles.CANCEL_SENDING,
        notification.id,
        actor_id=None,
        guard=col(Notification.attempt_count) == notification.attempt_count,
        values={"lease_expires_at": None, "last_error_code": error_code},
        details={"error_code": error_code, "attempt": notification.attempt_count},
    )


async def _link(
    work: UnitOfWork, notification: Notification, channel: NotificationChannel
) -> CreatedLink | None:
    ttl = channel.link_ttl_seconds
    if ttl is None and ChannelKind(channel.kind) is ChannelKind.EMAIL:
        ttl = EMAIL_LINK_TTL_SECONDS  # a mail to a reviewer always carries their link
    if channel.reviewer_id is None or ttl is None:
        return None
    return await link_for_notification(
        work,
        notification_id=notification.id,
        channel_id=channel.id,
        task_id=notification.task_id,
        reviewer_id=channel.reviewer_id,
        ttl_seconds=ttl,
        created_by_id=channel.created_by_id,
    )


async def record_attempt(
    work: UnitOfWork,
    outgoing: Outgoing,
    error_code: str | None,
    *,
    jitter: Jitter | None = None,
    retry_after: float | None = None,
    posted: tuple[str, str] | None = None,
    commit: bool = True,
) -> NotificationState | None:
    """Record how an attempt ended, if its lease still holds (one lapsed and taken over
    records nothing); the last failure opens an incident unless its channel was switched off
    meanwhile. A retry waits ``retry_after`` seconds if the receiver asked (Slack's
    ``Retry-After``), else the backoff; ``posted``: where a Slack post went, for updates.
    ``commit=False``: the caller commits (a batch's outcomes in one transaction)."""
    now = work.now()
    wanted = True
    held = sa.and_(
        col(Notification.attempt_count) == outgoing.attempt,
        col(Notification.lease_expires_at).is_not(None),
    )
    values: dict[str, Any]
    if error_code is None:
        edge, values = lifecycles.MARK_SENT, {"sent_at": now}
        if posted is not None:
            values |= {"slack_channel": posted[0], "slack_ts": posted[1]}
    elif outgoing.attempt < NOTIFICATION_MAX_ATTEMPTS:
        wait = retry_after if retry_after is not None else backoff_seconds(outgoing.attempt, jitter)
        retry_at = now + timedelta(seconds=wait)
        edge, values = lifecycles.SEND_LATER, {"next_attempt_at": retry_at}
    else:
        edge, values = lifecycles.GIVE_UP_SENDING, {}
        wanted = await _still_receives(work, outgoing.channel_id)
    moved = await NOTIFICATION.move(
        work,
        edge,
        outgoing.id,
        actor_id=None,
        guard=held,
        values={**values, "lease_expires_at": None, "last_error_code": error_code},
        details={"attempt": outgoing.attempt, "error_code": error_code},
    )
    if moved is not None and edge is lifecycles.SEND_LATER:
        work.schedule_notification(moved.id, outgoing.attempt + 1, values["next_attempt_at"])
    if moved is not None and edge is lifecycles.GIVE_UP_SENDING and wanted:
        incident_id = await upsert_incident(
            work,
            fingerprint=NOTIFICATION_INCIDENT_FINGERPRINT.format(notification_id=moved.id),
            kind="notification_failed",
            title=f"A {outgoing.kind.value} notification ({moved.event}) failed ({error_code})",
            entity_type="notification",
            entity_id=moved.id,
            error_code=error_code,
            severity=Severity.MEDIUM,
            summary=f"{outgoing.attempt} attempts to {outgoing.url} failed.",
        )
        assert incident_id is not None  # unconditional: inserted or counted
        await announce_occurrence(work, incident_id, error_code=error_code)
    if commit:
        await work.commit()
    return None if moved is None else NotificationState(moved.state)


async def _still_receives(work: UnitOfWork, channel_id: str) -> bool:
    """Whether the channel receives, read under a shared lock taken before the notification's
    row (the order switching a channel takes them in): a disable either committed before
    this read or waits until this outcome is recorded. SQLite's one writer orders them."""
    switched_off = await work.session.exec(
        select(NotificationChannel.disabled_at, NotificationChannel.removed_at)
        .where(NotificationChannel.id == channel_id)
        .with_for_update(read=True)
    )
    disabled_at, removed_at = switched_off.one()
    return disabled_at is None and removed_at is None
