"""Per-request context: the database sessions, the viewer, and the DataLoaders.

Up to two sessions, opened on first use and closed when the operation ends: ``db()`` for a
mutation's writes, ``read()`` for everything that only reads. Strawberry resolves sibling
fields concurrently and an ``AsyncSession`` allows one operation at a time, so each session
is used under its own lock; DataLoaders still batch, one query per loader per tick.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import logs
from signoff.database import SessionMaker
from signoff.errors import SignoffError
from signoff.resolvers.access.actors import authenticate_in
from signoff.resolvers.access.authenticator import Authenticator
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.access.viewer_cache import ViewerCache
from signoff.resolvers.core.work import Services, UnitOfWork
from signoff.resolvers.feed.subscriptions import Visibility
from signoff.schema.serving.shared_values import ExecutionValues

if TYPE_CHECKING:
    from signoff.schema.live import LiveSocket
    from signoff.schema.loaders import FeedLoaders, Loaders


VIEWER_DEPENDENT = "signoff.viewer_dependent"


def viewer_dependent() -> dict[str, Any]:
    """Field metadata (``strawberry.field(metadata=viewer_dependent())``) for a field whose
    value depends on who is asking: a subscription selecting it is executed per viewer."""
    return {VIEWER_DEPENDENT: True}


class SharedViewerError(RuntimeError):
    """A field read the viewer while executing for a broadcast group of many viewers.

    Fields that depend on who is asking are marked ``viewer_dependent``; a selection
    with such a field is executed per viewer. Reaching this means a field reads the
    viewer without the mark: a bug, which fails loudly instead of leaking one
    viewer's data to another.
    """


class Admission:
    """An HTTP operation's turn at the database, taken when it first opens a session and given
    back when it ends. Past the pool each request would open a connection of its own; turns
    keep the pool's connections busy and serve requests in order. One turn covers all of an
    operation's sessions, so none holds a connection while it waits (docs/design.md 12)."""

    def __init__(self, turns: asyncio.Semaphore) -> None:
        self._turns = turns
        self._held = False
        self._lock = asyncio.Lock()

    async def take(self) -> None:
        if self._held:
            return
        async with self._lock:  # sibling fields opening sessions at once take one turn
            if not self._held:
                await self._turns.acquire()
                self._held = True

    def give_back(self) -> None:
        if self._held:
            self._held = False
            self._turns.release()


class _LazySession:
    """One session, opened on first use (once the operation has its turn, if it waits
    for one), used by one operation at a time."""

    __slots__ = ("_admission", "_lock", "_session", "_sessionmaker")

    def __init__(self, sessionmaker: SessionMaker, admission: Admission | None) -> None:
        self._sessionmaker = sessionmaker
        self._admission = admission
        self._session: AsyncSession | None = None
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def use(self) -> AsyncIterator[AsyncSession]:
        async with self._lock:
            if self._session is None:
                if self._admission is not None:
                    await self._admission.take()
                self._session = self._sessionmaker()
            yield self._session

    def read(self) -> AbstractAsyncContextManager[AsyncSession]:
        """``use()``, as the request's loaders read (``schema.loaders.Reads``)."""
        return self.use()

    async def close(self) -> None:
        async with self._lock:
            if self._session is not None:
                await self._session.close()
                self._session = None


@dataclass
class Context:
    sessionmaker: SessionMaker
    token: str | None
    # Sessions for work that only reads; the write sessionmaker when not given.
    read_sessionmaker: SessionMaker | None = None
    request: Any = None
    response: Any = None
    request_id: str = field(default_factory=logs.request_id)
    # Live events (websockets only): this socket, as the live runtime serves it.
    live: LiveSocket | None = None
    feed_loaders: FeedLoaders | None = None
    # Executing a frame for a broadcast group: what its members may see.
    feed_visibility: Visibility | None = None
    # graphql-transport-ws / graphql-ws ``connection_init`` payload (Strawberry sets it).
    connection_params: dict[str, Any] | None = None
    # Executing one frame for a broadcast group: there is no single viewer to read.
    shared_viewer: bool = False
    # Executing one frame: values completed by the group's earlier frames of one write.
    shared_values: ExecutionValues | None = None
    # What a mutation's unit of work may use: job queue, event relay, sealer.
    services: Services = field(default_factory=Services)
    # The process's token -> viewer cache (none: read on every request).
    viewers: ViewerCache | None = None
    # An HTTP operation's turn at the database (none: it opens sessions without waiting).
    admission: Admission | None = None
    # Who a token is, with an OpenID provider's tokens too (none: API tokens only).
    authenticator: Authenticator | None = None
    _viewer: Viewer | None = None
    _loaders: Loaders | None = None
    # Made on first use: a websocket's context, one per connection, seldom opens either.
    _write: _LazySession | None = field(default=None, init=False)
    _read: _LazySession | None = field(default=None, init=False)

    def _writes(self) -> _LazySession:
        if self._write is None:
            self._write = _LazySession(self.sessionmaker, self.admission)
        return self._write

    def _reads(self) -> _LazySession:
        if self._read is None:
            self._read = _LazySession(self.read_sessionmaker or self.sessionmaker, self.admission)
        return self._read

    def db(self) -> AbstractAsyncContextManager[AsyncSession]:
        """The session for a mutation's writes (``async with ctx.db() as session``)."""
        return self._writes().use()

    @asynccontextmanager
    async def work(self) -> AsyncIterator[UnitOfWork]:
        """A mutation's unit of work, on the request's write session."""
        async with self.db() as session:
            yield UnitOfWork(session, self.services)

    def read(self) -> AbstractAsyncContextManager[AsyncSession]:
        """The session for reads (``async with ctx.read() as session``)."""
        return self._reads().use()

    def read_session(self) -> AsyncSession:
        """A new, separate read session, for work that must not share the request's."""
        return (self.read_sessionmaker or self.sessionmaker)()

    async def viewer(self) -> Viewer:
        """Authenticate the bearer token once per request."""
        if self.shared_viewer:
            raise SharedViewerError()
        if self._viewer is None:
            if self.viewers is None or self.token is None:
                self._viewer = await self._authenticate()
            else:
                self._viewer = await self.viewers.viewer(self.token, self._authenticate)
            logs.note(actor_id=self._viewer.id)
        return self._viewer

    def forget_viewers(self) -> None:
        """A membership changed in this process: its next requests read their viewers
        again (other processes see it within their cache's period)."""
        if self.viewers is not None:
            self.viewers.clear()

    async def _authenticate(self) -> Viewer:
        if self.authenticator is not None:
            take = None if self.admission is None else self.admission.take
            return await self.authenticator.viewer(self.token, take)
        if self.admission is not None:
            await self.admission.take()
        return await authenticate_in(self.read_sessionmaker or self.sessionmaker, self.token)

    @property
    def loaders(self) -> Loaders:
        if self._loaders is None:
            from signoff.schema.loaders import Loaders

            # They read through the read session, not the context: a context holding
            # loaders that hold it would be a reference cycle, and the request's rows
            # would wait for the cyclic garbage collector instead of going with it.
            self._loaders = Loaders(self._reads())
        return self._loaders

    async def end_reads(self) -> None:
        """After a write commits: later reads start a new transaction, which sees it."""
        if self._read is not None:
            await self._read.close()

    async def close(self) -> None:
        """Return both connections to the pool, and the turn; the context may be used
        again afterwards."""
        for sessions in (self._write, self._read):
            if sessions is not None:
                await sessions.close()
        if self.admission is not None:
            self.admission.give_back()


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def context_of(info: Any) -> Context:
    ctx = info.context
    assert isinstance(ctx, Context)
    return ctx


__all__ = [
    "Admission",
    "Context",
    "SharedViewerError",
    "SignoffError",
    "bearer_token",
    "context_of",
]
