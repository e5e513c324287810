"""``POST /integrations/slack/actions``: where Slack posts the clicks on Signoff's buttons
and the Reject modal's submission (docs/slack.md).

Every request is checked with ``slack_sdk``'s ``SignatureVerifier`` against the app's
signing secret, timestamps older than five minutes refused, before anything is read; the
payload then goes to ``SlackInteractions.interaction``, the path Socket Mode's envelopes
take too. This module only speaks HTTP.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from slack_sdk.signature import Clock, SignatureVerifier
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from signoff import clock
from signoff.config import Settings
from signoff.resolvers.core.work import WorkMaker
from signoff.resolvers.reach.slack_interactions import SlackInteractions

ACTIONS_PATH = "/integrations/slack/actions"
BODY_MAX_BYTES = 64 * 1024


class _SignoffClock(Clock):
    """The signature check's clock is Signoff's, which tests may hold still."""

    def now(self) -> float:
        return clock.now().timestamp()


class SlackActions:
    """The endpoint (``handle``); without a signing secret it answers 404."""

    def __init__(self, work: WorkMaker, settings: Settings) -> None:
        self.interactions = SlackInteractions(work, settings)
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
        answer = await self.interactions.interaction(payload)
        return Response(status_code=200) if answer is None else JSONResponse(answer)

    def _signed(self, body: bytes, request: Request) -> bool:
        assert self.verifier is not None
        try:
            return self.verifier.is_valid_request(body, dict(request.headers))
        except ValueError:  # a timestamp that is not a number
            return False
