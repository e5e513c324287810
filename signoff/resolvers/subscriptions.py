"""Watching the change feed: the rule behind every subscription.

Who may watch what, resuming after a cursor without a gap or a duplicate, and
checking each event against what the viewer may see now (a reviewer removed from a
queue stops receiving it).
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.database import SessionMaker
from signoff.errors import CursorExpired, CursorInvalid, Forbidden, NotFound, Unauthenticated
from signoff.events import feed
from signoff.events.hub import Change, EventHub
from signoff.models import ChangeEvent, Queue, Role
from signoff.models.change_event import MEMBERSHIP_KINDS
from signoff.resolvers.access import Viewer, require_role
from signoff.resolvers.actors import authenticate
from signoff.resolvers.proposals import get_proposal

CURSOR_PREFIX = "feed:"


def encode_cursor(cursor: int) -> str:
    """Cursors are opaque to clients."""
    return base64.urlsafe_b64encode(f"{CURSOR_PREFIX}{cursor}".encode()).decode().rstrip("=")


def decode_cursor(value: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
        if not raw.startswith(CURSOR_PREFIX):
            raise ValueError
        cursor = int(raw[len(CURSOR_PREFIX) :])
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise CursorInvalid() from None
    if cursor < 0:
        raise CursorInvalid()
    return cursor


def can_see_change(viewer: Viewer, change: Change) -> bool:
    """Staff see everything; reviewers their queues' events; agents their own proposals'."""
    if viewer.sees_everything:
        return True
    if viewer.role is Role.REVIEWER:
        return change.queue_id is not None and change.queue_id in viewer.queue_ids
    if viewer.role is Role.AGENT:
        return change.snapshot.get("proposedById") == viewer.id
    return False


@dataclass(frozen=True)
class FeedScope:
    """What one subscription asked for: a queue, all queues, one proposal, or incidents."""

    queue_id: str | None = None
    all_queues: bool = False
    proposal_id: str | None = None
    entity_type: str | None = None

    def matches(self, change: Change) -> bool:
        if self.all_queues:
            return change.queue_id is not None
        if self.queue_id is not None:
            return change.queue_id == self.queue_id
        if self.proposal_id is not None:
            return change.proposal_id == self.proposal_id
        return change.entity_type == self.entity_type

    def where(self, viewer: Viewer) -> list[Any]:
        """The same filter in SQL, for replay (visibility is re-checked per event)."""
        if self.all_queues:
            if viewer.sees_everything:
                return [col(ChangeEvent.queue_id).is_not(None)]
            return [col(ChangeEvent.queue_id).in_(sorted(viewer.queue_ids))]
        if self.queue_id is not None:
            return [ChangeEvent.queue_id == self.queue_id]
        if self.proposal_id is not None:
            return [ChangeEvent.proposal_id == self.proposal_id]
        return [ChangeEvent.entity_type == self.entity_type]


async def authorize_scope(session: AsyncSession, viewer: Viewer, scope: FeedScope) -> None:
    """Refuse a subscription the viewer may not open, before it starts."""
    if scope.queue_id is not None or scope.all_queues:
        require_role(viewer, Role.REVIEWER, Role.OPERATOR)
        if scope.queue_id is not None:
            if await session.get(Queue, scope.queue_id) is None:
                raise NotFound("No such queue.", field="queueId")
            if not viewer.can_see_queue(scope.queue_id):
                raise Forbidden("You are not a reviewer of this queue.")
    elif scope.proposal_id is not None:
        await get_proposal(session=session, viewer=viewer, proposal_id=scope.proposal_id)
    else:
        require_role(viewer, Role.OPERATOR)


async def check_resume(session: AsyncSession, after: str) -> int:
    """The cursor to replay from; expired or unknown cursors are refused."""
    cursor = decode_cursor(after)
    state = await feed.feed_state(session)
    if cursor > state.last_cursor:
        raise CursorInvalid("This cursor was not handed out by this change feed.")
    if cursor < state.pruned_through:
        raise CursorExpired()
    return cursor


class _Access:
    """The viewer, re-read when its memberships change or every ``refresh_seconds``.

    Checking each event against a cached viewer costs nothing per event; re-reading
    on a membership change of this actor makes a removal take effect at once.
    """

    def __init__(
        self, sessionmaker: SessionMaker, token: str, viewer: Viewer, refresh_seconds: float
    ) -> None:
        self._sessionmaker = sessionmaker
        self._token = token
        self.viewer = viewer
        self._refresh_seconds = refresh_seconds
        self._refreshed = time.monotonic()

    async def allows(self, change: Change) -> bool:
        concerns_viewer = change.kind in MEMBERSHIP_KINDS and change.entity_id == self.viewer.id
        if concerns_viewer or time.monotonic() - self._refreshed >= self._refresh_seconds:
            async with self._sessionmaker() as session:
                self.viewer = await authenticate(session=session, token=self._token)
            self._refreshed = time.monotonic()
        return can_see_change(self.viewer, change)


async def watch_changes(
    *,
    sessionmaker: SessionMaker,
    hub: EventHub,
    token: str | None,
    scope: FeedScope,
    after: str | None = None,
    on_overflow: Callable[[], None] | None = None,
    viewer: Viewer | None = None,
) -> AsyncGenerator[Change, None]:
    """Replay the events after ``after`` (if given), then go live, with no gap or duplicate.

    The live subscription is registered before the replay reads the table. The
    fanout only delivers stamped, committed events, so everything it delivered
    before registration is in the table for the replay, everything after it is in
    the buffer, and the overlap is dropped by cursor.
    """
    async with sessionmaker() as session:
        if viewer is None:  # the websocket's connection_init already authenticated it
            viewer = await authenticate(session=session, token=token)
        await authorize_scope(session, viewer, scope)
        start = None if after is None else await check_resume(session, after)
    if token is None:  # a viewer is only ever handed over with the token it came from
        raise Unauthenticated()
    access = _Access(sessionmaker, token, viewer, hub.auth_refresh_seconds)
    subscriber = hub.subscribe(scope.matches, on_overflow)
    try:
        last = 0
        if start is not None:
            last = start
            async for change in _replay(sessionmaker, scope, viewer, start):
                last = change.cursor
                if await _deliverable(access, scope, change):
                    yield change
        while True:
            change = await subscriber.get()
            if change.cursor <= last:
                continue
            last = change.cursor
            if await _deliverable(access, scope, change):
                yield change
    finally:
        hub.unsubscribe(subscriber)


async def _deliverable(access: _Access, scope: FeedScope, change: Change) -> bool:
    """Whether the viewer may see ``change`` now; a queue subscription ends on losing the queue."""
    if await access.allows(change):
        return True
    if scope.queue_id is not None and not access.viewer.can_see_queue(scope.queue_id):
        raise Forbidden("You are no longer a reviewer of this queue.")
    return False


async def _replay(
    sessionmaker: SessionMaker, scope: FeedScope, viewer: Viewer, after: int
) -> AsyncIterator[Change]:
    where = scope.where(viewer)
    while True:
        async with sessionmaker() as session:
            rows = await feed.events_after(session, after, where=where)
            await session.commit()
        for row in rows:
            yield Change.from_row(row)
        if not rows:
            return
        assert rows[-1].cursor is not None
        after = rows[-1].cursor


async def current_cursor(*, session: AsyncSession, viewer: Viewer) -> str:
    """The newest cursor: read a queue, then subscribe ``after`` it, and miss nothing between."""
    state = await feed.feed_state(session)
    await session.commit()
    return encode_cursor(state.last_cursor)
