"""Calls to Slack's Web API through the official ``slack_sdk`` client, at the API URL the
settings name (``SIGNOFF_SLACK_API_URL``; tests point it at a fake on loopback)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from signoff.constants import NOTIFICATION_TIMEOUT_SECONDS
from signoff.resolvers.reach.attempts import SENT, Attempt

NOT_POSTED_YET = "NOT_POSTED_YET"


def web_client(token: str, api_url: str, http: aiohttp.ClientSession | None) -> AsyncWebClient:
    """A client on the process's shared HTTP session (``None``: one of its own per call)."""
    return AsyncWebClient(
        token=token, base_url=api_url, session=http, timeout=NOTIFICATION_TIMEOUT_SECONDS
    )


async def send(client: AsyncWebClient, request: dict[str, Any]) -> Attempt:
    """One attempt of a notification's Web API call (``request`` as ``slack_request`` made
    it); a 429's ``Retry-After`` is kept for the retry's time."""
    arguments = {key: value for key, value in request.items() if key != "method"}
    method = request["method"]
    if method == "wait":
        return Attempt(NOT_POSTED_YET)
    try:
        async with asyncio.timeout(NOTIFICATION_TIMEOUT_SECONDS):
            answer = await client.api_call(method, json=arguments)
    except SlackApiError as refused:
        return refusal(refused)
    except TimeoutError:
        return Attempt("TIMEOUT")
    except aiohttp.ClientError:
        return Attempt("CONNECTION_FAILED")
    if method == "chat.postMessage":
        return Attempt(posted=(str(answer["channel"]), str(answer["ts"])))
    return SENT


def refusal(refused: SlackApiError) -> Attempt:
    """A Web API error as an attempt's outcome: ``SLACK_<error>``, or ``HTTP_429`` with the
    wait Slack asked for."""
    response = refused.response
    if response.status_code == 429:
        wait = response.headers.get("Retry-After") or response.headers.get("retry-after")
        return Attempt("HTTP_429", retry_after=float(wait) if wait else None)
    error = response.get("error") if isinstance(response.data, dict) else None
    return Attempt(f"SLACK_{str(error or response.status_code).upper()}"[:64])
