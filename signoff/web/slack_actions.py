"""``POST /integrations/slack/actions``: where Slack posts the clicks on Signoff's buttons
and the Reject modal's submission (docs/slack.md).

Every request is checked with ``slack_sdk``'s ``SignatureVerifier`` against the app's
signing secret, timestamps older than five minutes refused, before anything is read. The
decision itself is ``signoff.resolvers.reach.slack_actions``'s; this module only speaks
Slack's protocol: ephemeral answers, the modal, its errors.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qs

from slack_sdk.errors import SlackApiError
from slack_sdk.signature import Clock, SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from signoff import clock
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

ACTIONS_PATH = "/integrations/slack/actions"
BODY_MAX_BYTES = 64 * 1024
logger = logging.getLogger("signoff.slack")


class _SignoffClock(Clock):
    """The signature check's clock is Signoff's, which tests may hold still."""

    def now(self) -> float:
        return clock.now().timestamp()


class SlackActions:
    """The endpoint (``handle``); without a signing secret it answers 404."""

    def __init__(self, work: WorkMaker, settings: Settings) -> None:
        self.work, self.settings = work, settings
        secret = settings.slack_signing_secret
        self.verifier = None if secret is None else SignatureVerifier(secret, _SignoffClock())

    async def handle(self, request: Request) -> Response:
        if self.verifier is None:
            return PlainTextResponse("The Slack app is not configured.", status_code=404)
        body = await request.body()
        if len(body) > BODY_MAX_BYTES:
            return PlainTextResponse("Too large.", status_code=413)
        if not self._signed(body, request):
            return PlainTextResponse("Bad or stale Slack signature.", status_code=401)
        try:
            (raw,) = parse_qs(body.decode())["payload"]
            payload: dict[str, Any] = json.loads(raw)
        except (KeyError, ValueError, UnicodeDecodeError):
            return PlainTextResponse("Not a Slack interaction.", status_code=400)
        if payload.get("type") == "block_actions":
            await self._clicked(payload)
            return Response(status_code=200)
        if payload.get("type") == "view_submission":
            return await self._submitted(payload)
        return Response(status_code=200)

    def _signed(self, body: bytes, request: Request) -> bool:
        assert self.verifier is not None
        try:
            return self.verifier.is_valid_request(body, dict(request.headers))
        except ValueError:  # a timestamp that is not a number
            return False

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
        async with self.work() as work:
            try:
                await decide_from_slack(
                    work=work, slack_user_id=user, shown=shown, decision=decision, reason=reason
                )
            except SignoffError as refused:
                return refusal_words(refused)
        return None

    async def _ask_reason(
        self, user: str, shown: ButtonValue, payload: dict[str, Any]
    ) -> str | None:
        """Open the Reject modal for a linked reviewer; an unknown user is told at once."""
        async with self.work() as work:
            try:
                await slack_reviewer(work.session, user)
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

    async def _submitted(self, payload: dict[str, Any]) -> Response:
        """The Reject modal: decide with its reason, or show the refusal in the modal."""
        view = payload.get("view", {})
        if view.get("callback_id") != REJECT_MODAL:
            return Response(status_code=200)
        try:
            shown = ButtonValue.decode(str(view.get("private_metadata", "")))
        except ValueError:
            return Response(status_code=200)
        values = view.get("state", {}).get("values", {})
        reason = values.get(REASON_BLOCK, {}).get(REASON_INPUT, {}).get("value")
        user = str(payload.get("user", {}).get("id", ""))
        words = await self._decide(user, shown, Decision.REJECTED, reason)
        if words is None:
            return Response(status_code=200)  # closes the modal
        return JSONResponse({"response_action": "errors", "errors": {REASON_BLOCK: words}})

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
