"""Sending one claimed notification by its channel's carrier (docs/design.md section 5.6):
an HTTP POST (signed for webhooks), a Slack Web API call, or a mail; with no transaction
open."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import aiohttp

from signoff import clock
from signoff.config import SmtpSettings
from signoff.constants import NOTIFICATION_TIMEOUT_SECONDS, SLACK_API_URL
from signoff.delivery import DESTINATION_REFUSED
from signoff.destinations import carries_userinfo, refused_connection
from signoff.digest import canonical_json
from signoff.models import ChannelKind
from signoff.resolvers.reach import emails, slack_api
from signoff.resolvers.reach.attempts import Attempt
from signoff.resolvers.reach.notifications import Outgoing
from signoff.resolvers.reach.slack_api import web_client
from signoff.webhooks import sign


@dataclass(frozen=True)
class Carriers:
    """What sends notifications: HTTP for webhooks, Slack's Web API, an SMTP server."""

    http: aiohttp.ClientSession
    slack_api_url: str = SLACK_API_URL
    smtp: SmtpSettings | None = None


async def send_notification(carriers: Carriers, outgoing: Outgoing) -> Attempt:
    """One attempt, by the channel's carrier."""
    if outgoing.kind is ChannelKind.SLACK_APP:
        assert outgoing.secret is not None  # SLACK_APP channels keep their bot token
        client = web_client(outgoing.secret, carriers.slack_api_url, carriers.http)
        return await slack_api.send(client, outgoing.body)
    if outgoing.kind is ChannelKind.EMAIL:
        return await emails.send(carriers.smtp, outgoing.body)
    return Attempt(await post_notification(carriers.http, outgoing))


async def post_notification(http: aiohttp.ClientSession, outgoing: Outgoing) -> str | None:
    """One attempt over HTTP; returns ``None`` on a 2xx answer, else the error code."""
    body = canonical_json(outgoing.body).encode("utf-8")
    headers = {"content-type": "application/json", "signoff-attempt": str(outgoing.attempt)}
    if outgoing.secret is not None:
        timestamp = int(clock.now().timestamp())
        headers |= sign(outgoing.secret, f"ntf_{outgoing.id}", timestamp, body)
    if carries_userinfo(outgoing.url):  # added before the destination policy
        return DESTINATION_REFUSED
    try:
        async with (
            asyncio.timeout(NOTIFICATION_TIMEOUT_SECONDS),
            http.post(outgoing.url, data=body, headers=headers, allow_redirects=False) as answer,
        ):
            await answer.read()
            status = answer.status
    except TimeoutError:
        return "TIMEOUT"
    except aiohttp.ClientError as error:
        return DESTINATION_REFUSED if refused_connection(error) else "CONNECTION_FAILED"
    return None if 200 <= status < 300 else f"HTTP_{status}"
