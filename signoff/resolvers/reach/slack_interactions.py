"""Slack's interactions, however they arrive (``POST /integrations/slack/actions`` after its
signature check, or a Socket Mode envelope, ``signoff.jobs.slack_socket``): a button
decides or opens the Reject modal, the modal's submission decides, and each refusal is
answered in words, as an ephemeral message or in the modal (docs/slack.md).
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from signoff.config import Settings
from signoff.errors import SignoffError
from signoff.models import Decision
from signoff.resolvers.core.work import WorkMaker
from signoff.resolvers.reach.slack_actions import (
    decide_from_slack,
    refusal_words,
    slack_reviewer,
)
from signoff.resolvers.reach.slack_api import web_client
from signoff.resolvers.reach.slack_messages import (
    ACTION_APPROVE,
    ACTION_REJECT,
    REASON_BLOCK,
    REASON_INPUT,
    REJECT_MODAL,
    ButtonValue,
    reject_modal,
)
from signoff.resolvers.reach.slack_users import slack_actor_id

logger = logging.getLogger("signoff.slack")


class SlackInteractions:
    """The one path from an interaction's payload to its decision and its answer."""

    def __init__(self, work: WorkMaker, settings: Settings) -> None:
        self.work, self.settings = work, settings

    async def interaction(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        """What to answer Slack with, if anything but an empty acknowledgement."""
        if payload.get("type") == "block_actions":
            await self._clicked(payload)
            return None
        if payload.get("type") == "view_submission":
            return await self._submitted(payload)
        return None

    async def _clicked(self, payload: dict[str, Any]) -> None:
        """A button: Approve decides at once; Reject asks for the reason first."""
        for action in payload.get("actions", []):
            action_id = action.get("action_id")
            if action_id not in (ACTION_APPROVE, ACTION_REJECT):
                continue  # Open in Signoff is a link: nothing to do here
            try:
                shown = ButtonValue.decode(str(action.get("value", "")))
            except ValueError:
                continue
            user = str(payload.get("user", {}).get("id", ""))
            if action_id == ACTION_APPROVE:
                words = await self._decide(user, shown, Decision.APPROVED, None)
            else:
                words = await self._ask_reason(user, shown, payload)
            if words is not None:
                await self._answer(payload, user, words)

    async def _decide(
        self, user: str, shown: ButtonValue, decision: Decision, reason: str | None
    ) -> str | None:
        """Decide; the refusal in words, or ``None`` once decided (the message, updated
        through the change feed, shows it to everyone)."""
        try:
            actor_id = await slack_actor_id(
                work=self.work, client=self._client(), slack_user_id=user
            )
            async with self.work() as work:
                await decide_from_slack(
                    work=work, actor_id=actor_id, shown=shown, decision=decision, reason=reason
                )
        except SignoffError as refused:
            return refusal_words(refused)
        return None

    async def _ask_reason(
        self, user: str, shown: ButtonValue, payload: dict[str, Any]
    ) -> str | None:
        """Open the Reject modal for a known reviewer; an unknown user is told at once."""
        try:
            actor_id = await slack_actor_id(
                work=self.work, client=self._client(), slack_user_id=user
            )
            async with self.work.sessionmaker() as session:
                await slack_reviewer(session, actor_id)
        except SignoffError as refused:
            return refusal_words(refused)
        title = str(payload.get("message", {}).get("text", "Reject this proposal"))
        try:
            await self._client().views_open(
                trigger_id=str(payload.get("trigger_id", "")), view=reject_modal(shown, title)
            )
        except SlackApiError as refused:
            logger.warning("views.open failed: %s", refused.response.get("error"))
        return None

    async def _submitted(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The Reject modal: decide with its reason, or show the refusal in the modal."""
        view = payload.get("view", {})
        if view.get("callback_id") != REJECT_MODAL:
            return None
        try:
            shown = ButtonValue.decode(str(view.get("private_metadata", "")))
        except ValueError:
            return None
        values = view.get("state", {}).get("values", {})
        reason = values.get(REASON_BLOCK, {}).get(REASON_INPUT, {}).get("value")
        user = str(payload.get("user", {}).get("id", ""))
        words = await self._decide(user, shown, Decision.REJECTED, reason)
        if words is None:
            return None  # an empty answer closes the modal
        return {"response_action": "errors", "errors": {REASON_BLOCK: words}}

    async def _answer(self, payload: dict[str, Any], user: str, words: str) -> None:
        """An ephemeral message: only the one who clicked sees it."""
        channel = payload.get("channel", {}).get("id") or payload.get("container", {}).get(
            "channel_id"
        )
        if channel is None:
            return
        try:
            await self._client().chat_postEphemeral(channel=channel, user=user, text=words)
        except SlackApiError as refused:
            logger.warning("chat.postEphemeral failed: %s", refused.response.get("error"))

    def _client(self) -> AsyncWebClient:
        token = self.settings.slack_bot_token or ""
        return web_client(token, self.settings.slack_api_url, None)
