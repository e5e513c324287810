"""Per-request context: one database session, the viewer, and the DataLoaders.

Strawberry resolves sibling fields concurrently, but an ``AsyncSession`` allows one
operation at a time, so every use of the session goes through ``db()``, which
serialises them. DataLoaders still batch: one query per loader per tick.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.database import SessionMaker
from signoff.errors import SignoffError
from signoff.resolvers.access import Viewer
from signoff.resolvers.actors import authenticate

if TYPE_CHECKING:
    from signoff.events import EventHub
    from signoff.schema.loaders import FeedLoaders, Loaders


@dataclass
class Context:
    sessionmaker: SessionMaker
    token: str | None
    request: Any = None
    response: Any = None
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    # Live events: the process's hub and shared loaders; set by the websocket view.
    hub: EventHub | None = None
    feed_loaders: FeedLoaders | None = None
    # graphql-transport-ws / graphql-ws ``connection_init`` payload (Strawberry sets it).
    connection_params: dict[str, Any] | None = None
    _session: AsyncSession | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _viewer: Viewer | None = None
    _loaders: Loaders | None = None

    @asynccontextmanager
    async def db(self) -> AsyncIterator[AsyncSession]:
        async with self._lock:
            if self._session is None:
                self._session = self.sessionmaker()
            yield self._session

    async def viewer(self) -> Viewer:
        """Authenticate the bearer token once per request."""
        if self._viewer is None:
            async with self.db() as session:
                self._viewer = await authenticate(session=session, token=self.token)
        return self._viewer

    @property
    def loaders(self) -> Loaders:
        if self._loaders is None:
            from signoff.schema.loaders import Loaders

            self._loaders = Loaders(self)
        return self._loaders

    async def reset(self) -> None:
        """Between two events of a long-lived subscription: fresh loaders, no held connection.

        Under the lock, so a second subscription on the same socket never loses its
        session halfway through a query.
        """
        async with self._lock:
            self._loaders = None
            if self._session is not None:
                await self._session.close()
                self._session = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def context_of(info: Any) -> Context:
    ctx = info.context
    assert isinstance(ctx, Context)
    return ctx


__all__ = ["Context", "SignoffError", "bearer_token", "context_of"]
