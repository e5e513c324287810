"""The subscription root: live change feeds over graphql-transport-ws and graphql-ws.

Each field maps onto ``resolvers.subscriptions.watch_changes``. A subscriber that
falls behind its buffer has its socket closed with ``WS_CLOSE_TOO_SLOW`` (4429,
"subscriber too slow; resume with after") and resumes with ``after``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any

import strawberry

from signoff.constants import WS_CLOSE_TOO_SLOW, WS_CLOSE_TOO_SLOW_REASON
from signoff.errors import SignoffError
from signoff.resolvers.subscriptions import FeedScope, watch_changes
from signoff.schema.change_event import ChangeEvent
from signoff.schema.context import Context, context_of

logger = logging.getLogger("signoff.subscriptions")

_closing: set[asyncio.Task[None]] = set()


class LiveEventsUnavailable(SignoffError):
    """Subscriptions are served over websockets at ``/graphql`` only."""

    code = "SUBSCRIPTIONS_UNAVAILABLE"
    default_message = "Subscribe over a websocket (graphql-transport-ws) at /graphql."


@strawberry.type
class Subscription:
    @strawberry.subscription(
        description=(
            "Changes in one queue, or in every queue you may see when queueId is omitted. "
            "With `after`, first replays what you missed."
        )
    )
    async def queue_events(
        self,
        info: strawberry.Info,
        queue_id: strawberry.ID | None = None,
        after: str | None = None,
    ) -> AsyncGenerator[ChangeEvent, None]:
        scope = FeedScope(queue_id=queue_id, all_queues=queue_id is None)
        async for event in _watch(info, scope, after):
            yield event

    @strawberry.subscription(description="Changes to one proposal and its approval task.")
    async def proposal_events(
        self, info: strawberry.Info, proposal_id: strawberry.ID, after: str | None = None
    ) -> AsyncGenerator[ChangeEvent, None]:
        async for event in _watch(info, FeedScope(proposal_id=proposal_id), after):
            yield event

    @strawberry.subscription(description="Incidents opened by dead letters. Operators.")
    async def incident_events(
        self, info: strawberry.Info, after: str | None = None
    ) -> AsyncGenerator[ChangeEvent, None]:
        async for event in _watch(info, FeedScope(entity_type="incident"), after):
            yield event


async def _watch(
    info: strawberry.Info, scope: FeedScope, after: str | None
) -> AsyncGenerator[ChangeEvent, None]:
    ctx = context_of(info)
    if ctx.hub is None:
        raise LiveEventsUnavailable()
    stream = watch_changes(
        sessionmaker=ctx.sessionmaker,
        hub=ctx.hub,
        token=ctx.token,
        scope=scope,
        after=after,
        on_overflow=_closer(ctx),
        viewer=ctx._viewer,
    )
    async with contextlib.aclosing(stream):
        async for change in stream:
            yield ChangeEvent.from_change(change)
            await ctx.reset()


def _closer(ctx: Context) -> Callable[[], None]:
    """Close the subscriber's socket with a clear reason, without waiting for it."""

    def close() -> None:
        logger.info("closing a subscriber that fell behind request_id=%s", ctx.request_id)
        task = asyncio.create_task(_close(ctx.response))
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    return close


async def _close(websocket: Any) -> None:
    with contextlib.suppress(Exception):
        await websocket.close(code=WS_CLOSE_TOO_SLOW, reason=WS_CLOSE_TOO_SLOW_REASON)
