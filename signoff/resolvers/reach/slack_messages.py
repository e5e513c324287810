"""The Slack app's messages (docs/design.md section 5.6, docs/slack.md): an approval task
as Block Kit, with Approve, Reject and Open in Signoff, drawn from the proposal as it is
when the message is sent, so that a post or an update always shows the truth.

Agent-supplied text reaches Slack only in ``plain_text`` objects or through ``mrkdwn``,
the one escaping function, so nothing a proposer writes becomes a mention or a link.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.models import (
    Actor,
    Approval,
    Decision,
    HumanTask,
    Notification,
    NotificationChannel,
    Proposal,
    ProposalState,
    Target,
)
from signoff.models.notification import MESSAGE_UPDATE_EVENT, POSTING_EVENTS
from signoff.models.proposal import format_expiry

ACTION_APPROVE = "signoff_approve"
ACTION_REJECT = "signoff_reject"
ACTION_OPEN = "signoff_open"
REJECT_MODAL = "signoff_reject_modal"
REASON_BLOCK, REASON_INPUT = "reason", "reason_input"
SLACK_CHANNEL_URL = "slack://channel?id={channel}"
# Slack refuses a section's text over 3,000 characters and a header's over 150.
_SECTION_MAX, _HEADER_MAX = 2900, 150
WAIT = {"method": "wait"}  # an update of a message Slack has not confirmed yet


def mrkdwn(text: str) -> str:
    """Text from agents or operators as Slack shows it literally, in a message's text or a
    ``mrkdwn`` object: ``&``, ``<`` and ``>`` escaped as Slack's formatting rules ask, so
    ``<!channel>`` mentions no one and ``<https://…|Approve>`` is no link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_channel_url(channel: str) -> str:
    """How a SLACK_APP channel stores its Slack channel (in ``url``, as Slack links to it)."""
    return SLACK_CHANNEL_URL.format(channel=channel)


def slack_channel_of(url: str) -> str:
    (channel,) = parse_qs(urlsplit(url).query)["id"]
    return channel


@dataclass(frozen=True)
class ButtonValue:
    """What a button carries back: the proposal and the digest the message showed."""

    proposal_id: str
    payload_digest: str

    def encode(self) -> str:
        return json.dumps({"p": self.proposal_id, "d": self.payload_digest}, separators=(",", ":"))

    @classmethod
    def decode(cls, value: str) -> ButtonValue:
        """Raises ``ValueError`` for anything Signoff did not put on a button."""
        try:
            data = json.loads(value)
            return cls(proposal_id=str(data["p"]), payload_digest=str(data["d"]))
        except (TypeError, KeyError, json.JSONDecodeError) as bad:
            raise ValueError("not a Signoff button") from bad


@dataclass(frozen=True)
class Decider:
    name: str
    decision: Decision
    reason: str | None


@dataclass(frozen=True)
class Shown:
    """Everything a message shows, read in one transaction."""

    task: HumanTask
    proposal: Proposal
    target: Target
    proposer: str
    deciders: list[Decider]
    include_payload: bool
    console_url: str
    in_queue: bool  # the task is still in the queue the channel belongs to
    now: datetime


async def load_shown(
    session: AsyncSession,
    channel: NotificationChannel,
    task_id: str,
    public_url: str,
    now: datetime,
) -> Shown | None:
    """What the channel's message about the task shows now; ``None`` for a task that is not
    an approval task."""
    task = await session.get(HumanTask, task_id, populate_existing=True)
    if task is None or task.proposal_id is None:
        return None
    proposal = await session.get(Proposal, task.proposal_id, populate_existing=True)
    assert proposal is not None  # approval tasks point at their proposal
    target = await session.get(Target, proposal.target_id)
    proposer = await session.get(Actor, proposal.proposed_by_id)
    assert target is not None and proposer is not None
    decided = await session.exec(
        select(Actor.name, Approval.decision, Approval.reason)
        .join(Actor, col(Actor.id) == Approval.approver_id)
        .where(Approval.proposal_id == proposal.id, Approval.revision == proposal.revision)
        .order_by(col(Approval.created_at))
    )
    return Shown(
        task=task,
        proposal=proposal,
        target=target,
        proposer=proposer.name,
        deciders=[Decider(name, Decision(decision), reason) for name, decision, reason in decided],
        include_payload=channel.include_payload,
        console_url=f"{public_url}/#/task/{task.id}",
        in_queue=task.queue_id == channel.queue_id,
        now=now,
    )


class ShownCache:
    """``load_shown`` once per task, queue and payload choice within one claim: a task
    notified to ten channels of its queue is read once, not ten times."""

    def __init__(self) -> None:
        self._shown: dict[tuple[str, str, bool], Shown | None] = {}

    async def load(
        self,
        session: AsyncSession,
        channel: NotificationChannel,
        task_id: str,
        public_url: str,
        now: datetime,
    ) -> Shown | None:
        key = (task_id, channel.queue_id, channel.include_payload)
        if key not in self._shown:
            self._shown[key] = await load_shown(session, channel, task_id, public_url, now)
        return self._shown[key]


def awaiting(shown: Shown) -> bool:
    proposal = shown.proposal
    return (
        shown.in_queue
        and proposal.state == ProposalState.APPROVAL_REQUIRED
        and proposal.expires_at > shown.now
    )


def message(shown: Shown) -> dict[str, Any]:
    """The message: ``text`` (notifications, clients without blocks) and ``blocks``."""
    proposal, target = shown.proposal, shown.target
    fields = [
        f"*Target*\n{mrkdwn(target.name)}",
        f"*Action*\n{mrkdwn(proposal.action_code)}",
        f"*Proposed by*\n{mrkdwn(shown.proposer)}",
        f"*Deadline*\n{format_expiry(proposal.expires_at)}",
    ]
    summary = target.summary_field
    if summary is not None and summary in proposal.payload:
        fields.append(f"*{mrkdwn(summary)}*\n{mrkdwn(str(proposal.payload[summary]))}")
    if proposal.revision > 1:
        fields.append(f"*Revision*\n{proposal.revision}")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": _plain(shown.task.title[:_HEADER_MAX])},
        {"type": "section", "fields": [{"type": "mrkdwn", "text": f} for f in fields]},
    ]
    if shown.include_payload:
        payload = json.dumps(proposal.payload, indent=2, sort_keys=True)[:_SECTION_MAX]
        blocks.append(
            {"type": "section", "text": {"type": "mrkdwn", "text": f"```{mrkdwn(payload)}```"}}
        )
    status = status_line(shown)
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": status}]})
    if awaiting(shown):
        blocks.append(_buttons(shown))
    else:
        blocks.append({"type": "actions", "elements": [_open_button(shown)]})
    return {"text": f"{shown.task.title}: {status}", "blocks": blocks}


def status_line(shown: Shown) -> str:
    """Where the proposal stands, in words: who decided and the outcome."""
    proposal = shown.proposal
    approvers = ", ".join(mrkdwn(d.name) for d in shown.deciders if d.decision is Decision.APPROVED)
    state = ProposalState(proposal.state)
    if state == ProposalState.REJECTED:
        rejecter = next((d for d in shown.deciders if d.decision is Decision.REJECTED), None)
        if rejecter is None:
            return "*Rejected* at its deadline."
        because = f": {mrkdwn(rejecter.reason)}" if rejecter.reason else "."
        return f"*Rejected* by {mrkdwn(rejecter.name)}{because}"
    if state == ProposalState.CANCELLED:
        return "*Expired* without a decision."
    if state == ProposalState.APPLIED:
        return f"*Approved* by {approvers} and *delivered*."
    if state == ProposalState.FAILED and proposal.delivery_terminal:
        return f"*Approved* by {approvers}; *delivery failed*."
    if state == ProposalState.COMPENSATION_REQUIRED:
        return f"*Approved* by {approvers} and delivered; *compensation required*."
    if state != ProposalState.APPROVAL_REQUIRED:
        return f"*Approved* by {approvers}; being delivered."
    if not shown.in_queue:
        return "*Escalated* to another queue."
    if proposal.expires_at <= shown.now:
        return "*Deadline passed.*"
    so_far = f" ({approvers})" if approvers else ""
    return (
        f"Waiting for approval: {proposal.approval_count} of {proposal.required_approvals}{so_far}."
    )


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": False}


def _buttons(shown: Shown) -> dict[str, Any]:
    value = ButtonValue(shown.proposal.id, shown.proposal.payload_digest).encode()
    return {
        "type": "actions",
        "block_id": f"signoff:{shown.proposal.id}",
        "elements": [
            {
                "type": "button",
                "action_id": ACTION_APPROVE,
                "text": _plain("Approve"),
                "style": "primary",
                "value": value,
            },
            {
                "type": "button",
                "action_id": ACTION_REJECT,
                "text": _plain("Reject"),
                "style": "danger",
                "value": value,
            },
            _open_button(shown),
        ],
    }


def _open_button(shown: Shown) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": ACTION_OPEN,
        "text": _plain("Open in Signoff"),
        "url": shown.console_url,
    }


def reject_modal(value: ButtonValue, title: str) -> dict[str, Any]:
    """The modal that asks for a rejection's reason; its submission decides."""
    return {
        "type": "modal",
        "callback_id": REJECT_MODAL,
        "private_metadata": value.encode(),
        "title": _plain("Reject"),
        "submit": _plain("Reject"),
        "close": _plain("Cancel"),
        "blocks": [
            {"type": "section", "text": _plain(title[:_SECTION_MAX])},
            {
                "type": "input",
                "block_id": REASON_BLOCK,
                "label": _plain("Reason"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": REASON_INPUT,
                    "multiline": True,
                    "min_length": 3,
                    "max_length": 2000,
                },
            },
        ],
    }


async def slack_request(
    session: AsyncSession,
    notification: Notification,
    channel: NotificationChannel,
    public_url: str,
    now: datetime,
    cache: ShownCache | None = None,
) -> dict[str, Any]:
    """The Web API call that sends ``notification``: a post, a reply in the thread of the
    task's post (reminders), or ``chat.update`` of a post (``WAIT`` until Slack has it)."""
    slack_channel = slack_channel_of(channel.url)
    shown = await (cache or ShownCache()).load(
        session, channel, notification.task_id, public_url, now
    )
    if notification.event == MESSAGE_UPDATE_EVENT:
        post = await session.get(Notification, notification.body["update_of"])
        if post is None or post.slack_ts is None or shown is None:
            return WAIT
        return {
            "method": "chat.update",
            "channel": post.slack_channel,
            "ts": post.slack_ts,
            **message(shown),
        }
    if shown is None:
        return WAIT
    if notification.event not in POSTING_EVENTS:
        thread = await _thread_of(session, notification)
        if thread is not None:
            return {
                "method": "chat.postMessage",
                "channel": slack_channel,
                "thread_ts": thread,
                "text": f"Due soon: {mrkdwn(shown.task.title)} "
                f"(deadline {format_expiry(shown.proposal.expires_at)}).",
            }
    return {"method": "chat.postMessage", "channel": slack_channel, **message(shown)}


async def _thread_of(session: AsyncSession, notification: Notification) -> str | None:
    """The ``ts`` of the channel's post about the notification's task, if Slack has it."""
    posted = await session.exec(
        select(Notification.slack_ts)
        .where(
            Notification.channel_id == notification.channel_id,
            Notification.task_id == notification.task_id,
            col(Notification.slack_ts).is_not(None),
        )
        .order_by(col(Notification.created_at))
        .limit(1)
    )
    return posted.first()
