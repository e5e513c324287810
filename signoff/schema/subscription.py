"""The subscription root: live change feeds over graphql-transport-ws, graphql-ws and
graphql-sse.

Each field hands its scope to the socket's live runtime (``schema.live.LiveSocket``),
which authorises it and executes each event's frame once for every subscriber who sees
the same. A connection that falls behind is closed with 4429
("subscriber too slow; resume with after") and resumes with ``after``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator

import strawberry

from signoff.errors import SignoffError
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.feed.subscriptions import FeedScope, draft_scope
from signoff.schema.change_event import ChangeEvent
from signoff.schema.context import context_of
from signoff.schema.live import ScopeOf


class LiveEventsUnavailable(SignoffError):
    """Subscriptions are served over websockets and Server-Sent Events at ``/graphql`` only."""

    code = "SUBSCRIPTIONS_UNAVAILABLE"
    default_message = (
        "Subscribe over a websocket (graphql-transport-ws) or Server-Sent Events (graphql-sse: "
        "Accept: text/event-stream) at /graphql."
    )


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

    @strawberry.subscription(
        description=(
            "Changes to your own drafts of one session (whatever your role), so your screen "
            "follows an agent's edits live; each frame's `draft` is the draft as it is now. "
            "With `after`, first replays what you missed."
        )
    )
    async def draft_events(
        self, info: strawberry.Info, session_id: str, after: str | None = None
    ) -> AsyncGenerator[ChangeEvent, None]:
        async for event in _watch(info, functools.partial(_draft_scope, session_id), after):
            yield event


def _draft_scope(session_id: str, viewer: Viewer) -> FeedScope:
    return draft_scope(viewer, session_id)


async def _watch(
    info: strawberry.Info, scope: ScopeOf, after: str | None
) -> AsyncGenerator[ChangeEvent, None]:
    """The subscription's source stream. It yields nothing itself: the live runtime
    computes each frame once for everyone who sees the same and sends it through the
    socket's writer. Returning completes the subscription; raising sends the error first."""
    live = context_of(info).live
    if live is None:
        raise LiveEventsUnavailable()
    await live.follow(info, scope, after)
    nothing: tuple[ChangeEvent, ...] = ()
    for event in nothing:
        yield event
