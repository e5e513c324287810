"""What the subscription root asks of the live runtime (``signoff.live``).

The runtime (websocket protocol, broadcast groups, per-event execution) is transport
machinery, not GraphQL types: the subscription fields reach it only through
``LiveSocket``, which a websocket's context carries.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import strawberry

from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.feed.subscriptions import FeedScope

# A subscription's scope, or how to make it from the viewer (drafts: the viewer's own).
ScopeOf = FeedScope | Callable[[Viewer], FeedScope]


class Detached(BaseException):
    """A subscription handed over, once authorised, from Strawberry's operation to its
    transport, which runs ``serve`` to its end without Strawberry's and graphql-core's
    per-operation machinery (execution and extension contexts, the suspended frames of
    ``schema.stream``), kept otherwise with each of thousands of subscriptions. A
    ``BaseException``, as a cancellation is: their handlers of a failing stream (``except
    Exception``) let it pass."""

    def __init__(self, serve: Callable[[], Awaitable[None]]) -> None:
        super().__init__()
        self.serve = serve
        # Set on the way out by the operation's own hook (``FinishOperation``): what the
        # operation's end is counted and logged as.
        self.operation_name: str | None = None


class LiveSocket(Protocol):
    """One websocket, as the subscription fields and the app see it."""

    async def follow(
        self, info: strawberry.Info[Any, Any], scope: ScopeOf, after: str | None
    ) -> None:
        """Serve one subscription of this socket until it ends: authorise it, replay what
        was missed after ``after``, then send live frames. Returns when the subscription
        or the socket ends; raises the error that ended it (a refusal, too slow, a lost
        right to watch), or, once the subscription is authorised, ``Detached`` where the
        transport serves it on from there."""

    async def close(self, code: int, reason: str) -> None:
        """Close the socket after what was queued before."""

    def end_at(self, expires_at: float) -> None:
        """Close the socket with 4403 at ``expires_at`` (seconds since the epoch), when
        the credential it authenticated with ends by itself."""
