"""Mail to one reviewer (docs/design.md section 5.6): an EMAIL channel sends each
notification of an approval task as a plain-text and HTML message with the payload
summary and a single-use approval link (section 5.7), through SMTP (``aiosmtplib``).

Each task's mails thread: the first one's ``Message-ID`` is the task's, and reminders
answer it (``In-Reply-To``, ``References``). Replies decide nothing: mail is forgeable,
so only the link's page, with the digest it shows, decides.
"""

from __future__ import annotations

import asyncio
import html
import json
from email.message import EmailMessage
from email.utils import formatdate
from typing import Any

import aiosmtplib

from signoff.config import SmtpSettings
from signoff.constants import NOTIFICATION_TIMEOUT_SECONDS
from signoff.models import NotificationChannel
from signoff.models.proposal import format_expiry
from signoff.resolvers.reach.attempts import SENT, Attempt
from signoff.resolvers.reach.slack_messages import Shown, status_line

MAILTO = "mailto:"
SUBJECTS = {
    "task.created": "Approval needed",
    "task.due_soon": "Due soon",
    "task.escalated": "Escalated",
}


def email_url(address: str) -> str:
    """How an EMAIL channel stores its reviewer's address (in ``url``)."""
    return MAILTO + address


def address_of(channel: NotificationChannel) -> str:
    return channel.url.removeprefix(MAILTO)


def message_id(task_id: str, domain: str) -> str:
    """The task's thread: the ``Message-ID`` of its first mail."""
    return f"<task-{task_id}@{domain}>"


def mail(
    *,
    notification_id: str,
    event: str,
    channel: NotificationChannel,
    shown: Shown,
    link: tuple[str, str] | None,
    public_url: str,
    sender: str,
) -> dict[str, Any]:
    """The message as a JSON-able document (the claim makes it; the sender only sends it).
    ``link``: the approval link's URL and its expiry, if one was made."""
    domain = sender.rpartition("@")[2] or "signoff"
    thread = message_id(shown.task.id, domain)
    first = event == "task.created"
    headers = {
        "From": sender,
        "To": address_of(channel),
        "Subject": f"{SUBJECTS.get(event, event)}: {shown.task.title}",
        "Message-ID": thread if first else f"<notification-{notification_id}@{domain}>",
        "List-Unsubscribe": f"<mailto:{sender}?subject=unsubscribe%20{channel.id}>",
        "Auto-Submitted": "auto-generated",
    }
    if not first:
        headers |= {"In-Reply-To": thread, "References": thread}
    return {"headers": headers, **_bodies(channel, shown, link, public_url)}


def plain_mail(
    event: str, channel: NotificationChannel, body: dict[str, Any], sender: str
) -> dict[str, Any]:
    """A mail about a task with no proposal: its notification's text."""
    text = str(body.get("text", event))
    return {
        "headers": {
            "From": sender,
            "To": address_of(channel),
            "Subject": f"{SUBJECTS.get(event, event)}",
            "List-Unsubscribe": f"<mailto:{sender}?subject=unsubscribe%20{channel.id}>",
            "Auto-Submitted": "auto-generated",
        },
        "text": text + "\n",
        "html": f"<p>{html.escape(text)}</p>",
    }


def _bodies(
    channel: NotificationChannel, shown: Shown, link: tuple[str, str] | None, public_url: str
) -> dict[str, str]:
    proposal, target = shown.proposal, shown.target
    rows = [
        ("Target", target.name),
        ("Action", proposal.action_code),
        ("Proposed by", shown.proposer),
        ("Deadline", format_expiry(proposal.expires_at)),
        ("Digest", proposal.payload_digest),
    ]
    summary = target.summary_field
    if summary is not None and summary in proposal.payload:
        rows.append((summary, str(proposal.payload[summary])))
    status = status_line(shown).replace("*", "")
    payload = json.dumps(proposal.payload, indent=2, sort_keys=True)
    lines = [shown.task.title, "", *(f"{k}: {v}" for k, v in rows), "", status]
    parts = ["<h1>" + html.escape(shown.task.title) + "</h1>", "<table>"]
    parts += [f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows]
    parts += ["</table>", f"<p>{html.escape(status)}</p>"]
    if channel.include_payload:
        lines += ["", payload]
        parts.append(f"<pre>{html.escape(payload)}</pre>")
    if link is not None:
        url, expires = link
        lines += ["", f"Review and decide (once, until {expires}): {url}"]
        parts.append(
            f'<p><a href="{html.escape(url)}">Review and decide</a> (once, until '
            f"{html.escape(expires)})</p>"
        )
    lines += [
        "",
        f"Open in Signoff: {public_url}/#/task/{shown.task.id}",
        "Replying to this mail decides nothing.",
    ]
    parts.append("<p>Replying to this mail decides nothing.</p>")
    return {"text": "\n".join(lines) + "\n", "html": "\n".join(parts)}


def email_message(document: dict[str, Any]) -> EmailMessage:
    message = EmailMessage()
    for name, value in document["headers"].items():
        message[name] = value
    message["Date"] = formatdate(usegmt=True)
    message.set_content(document["text"])
    message.add_alternative(document["html"], subtype="html")
    return message


async def send(smtp: SmtpSettings | None, document: dict[str, Any]) -> Attempt:
    """One attempt through the settings' SMTP server."""
    if smtp is None:
        return Attempt("SMTP_NOT_CONFIGURED")
    try:
        async with asyncio.timeout(NOTIFICATION_TIMEOUT_SECONDS):
            await aiosmtplib.send(
                email_message(document),
                hostname=smtp.host,
                port=smtp.port,
                start_tls=smtp.starttls,
                username=smtp.username,
                password=smtp.password,
                timeout=NOTIFICATION_TIMEOUT_SECONDS,
            )
    except TimeoutError:
        return Attempt("TIMEOUT")
    except aiosmtplib.SMTPResponseException as refused:
        return Attempt(f"SMTP_{refused.code}")
    except (aiosmtplib.SMTPException, OSError):
        return Attempt("CONNECTION_FAILED")
    return SENT
