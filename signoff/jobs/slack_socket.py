"""Slack without a public URL: Socket Mode (docs/slack.md, "Behind a firewall").

One process (``signoff serve`` without Redis, else ``signoff worker``) holds a websocket
that ``slack_sdk``'s aiohttp client opens with the app-level token and opens again,
at a fresh URL, whenever it closes. An ``interactive`` envelope is answered by
``SlackInteractions.interaction``, exactly what the HTTP endpoint does with the same
payload, then acknowledged; no signature is checked: the connection is Signoff's own.
"""

from __future__ import annotations

import asyncio
import logging

from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from signoff.config import Settings
from signoff.constants import SLACK_SOCKET_PING_SECONDS, SLACK_SOCKET_STOP_GRACE_SECONDS
from signoff.resolvers.core.work import WorkMaker
from signoff.resolvers.reach.slack_interactions import SlackInteractions

INTERACTIVE = "interactive"
logger = logging.getLogger("signoff.slack.socket")


class SlackSocket:
    """One Socket Mode connection, kept open from ``start`` to ``stop``."""

    def __init__(self, actions: SlackInteractions, app_token: str, api_url: str) -> None:
        self.actions, self.app_token, self.api_url = actions, app_token, api_url
        self.client: SocketModeClient | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._answering: set[asyncio.Task[object]] = set()

    async def start(self) -> None:
        """Connect in the background: a Slack that is away at start is tried again every
        ping interval, and the process starts all the same."""
        self.client = SocketModeClient(
            app_token=self.app_token,
            logger=logger,
            web_client=AsyncWebClient(base_url=self.api_url),
            ping_interval=SLACK_SOCKET_PING_SECONDS,
        )
        self.client.socket_mode_request_listeners.append(self._received)
        self._connecting = asyncio.create_task(self.client.connect())  # type: ignore[no-untyped-call]

    async def stop(self) -> None:
        """Let envelopes being answered finish (for a while), then close the socket."""
        if self._answering:
            await asyncio.wait(self._answering, timeout=SLACK_SOCKET_STOP_GRACE_SECONDS)
        if self.client is not None:
            await self.client.close()  # type: ignore[no-untyped-call]
        if self._connecting is not None:
            self._connecting.cancel()
            await asyncio.gather(self._connecting, return_exceptions=True)

    async def _received(
        self, client: AsyncBaseSocketModeClient, request: SocketModeRequest
    ) -> None:
        """Answer an envelope as the HTTP endpoint answers the same payload, then ack it."""
        task = asyncio.current_task()
        if task is not None:
            self._answering.add(task)
        try:
            answer = None
            if request.type == INTERACTIVE:
                answer = await self.actions.interaction(request.payload)
            await client.send_socket_mode_response(
                SocketModeResponse(envelope_id=request.envelope_id, payload=answer)
            )
        finally:
            if task is not None:
                self._answering.discard(task)


def slack_socket(work: WorkMaker, settings: Settings) -> SlackSocket | None:
    """This process's Socket Mode connection, when the settings turn it on."""
    if not settings.slack_socket_mode:
        return None
    assert settings.slack_app_token is not None  # Settings refuse the mode without it
    return SlackSocket(
        SlackInteractions(work, settings), settings.slack_app_token, settings.slack_api_url
    )
