"""Who clicked in Slack (docs/slack.md, "Who clicked"): the actor an admin linked to the
Slack user, or else the one actor who signed in through the identity provider with the
verified email of the Slack profile (``users.info``, scope ``users:read.email``). An
address two actors signed in with is refused: either could be the wrong person. No
database session is open while Slack is asked.
"""

from __future__ import annotations

import asyncio
import logging
import re

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from sqlmodel import col, select

from signoff.constants import NOTIFICATION_TIMEOUT_SECONDS
from signoff.errors import SlackUserAmbiguous, SlackUserUnknown
from signoff.models import Actor, OidcIdentity
from signoff.models.actor import email_hash
from signoff.resolvers.core.work import WorkMaker

SLACK_USER_ID = re.compile(r"[UW][A-Z0-9]{2,31}")
logger = logging.getLogger("signoff.slack")


async def slack_actor_id(*, work: WorkMaker, client: AsyncWebClient, slack_user_id: str) -> str:
    """The id of the actor a Slack user decides as: linked, or signed in with their email."""
    async with work.sessionmaker() as session:
        linked = await session.exec(select(Actor.id).where(Actor.slack_user_id == slack_user_id))
        actor_id = linked.first()
    if actor_id is not None:
        return actor_id
    address = await profile_email(client, slack_user_id)
    if address is None:
        raise SlackUserUnknown()
    async with work.sessionmaker() as session:
        found = await session.exec(
            select(OidcIdentity.actor_id)
            .where(col(OidcIdentity.email_hash) == email_hash(address))
            .distinct()
        )
        actor_ids = found.all()
    if len(actor_ids) > 1:
        raise SlackUserAmbiguous()
    if not actor_ids:
        raise SlackUserUnknown()
    return actor_ids[0]


async def profile_email(client: AsyncWebClient, slack_user_id: str) -> str | None:
    """The email address of a Slack user's profile; ``None`` for a user Slack does not
    know, a bot, a deactivated account, an address Slack has not confirmed, or a Slack
    that does not answer (logged: a missing ``users:read.email`` scope shows here)."""
    if not SLACK_USER_ID.fullmatch(slack_user_id):
        return None
    try:
        async with asyncio.timeout(NOTIFICATION_TIMEOUT_SECONDS):
            answer = await client.users_info(user=slack_user_id)
    except SlackApiError as refused:
        data = refused.response.data
        error = data.get("error") if isinstance(data, dict) else refused.response.status_code
        logger.warning("users.info failed: %s", error)
        return None
    except (TimeoutError, aiohttp.ClientError) as failed:
        logger.warning("users.info failed: %s", type(failed).__name__)
        return None
    user = answer.get("user") or {}
    if user.get("deleted") or user.get("is_bot") or user.get("is_email_confirmed") is False:
        return None
    address = (user.get("profile") or {}).get("email")
    return address if isinstance(address, str) and address.strip() else None
