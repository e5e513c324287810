"""Watching the change feed: the rules behind every subscription.

Who may watch what (``authorize_scope``), what each viewer may see of it
(``Visibility``), resuming after a cursor (``resume_point``, ``replay``), and
what a re-read viewer may still watch (``ensure_still_allowed``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Container
from dataclasses import dataclass
from typing import Any

from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.database import SessionMaker
from signoff.errors import CursorExpired, CursorInvalid, Forbidden
from signoff.events import feed
from signoff.events.hub import Change
from signoff.models import ChangeEvent, Queue, Role
from signoff.models.change_event import ACCESS_KINDS
from signoff.resolvers.access.rules import STAFF, Viewer, require_role, sees, sees_now_in
from signoff.resolvers.access.viewer_cache import ViewerCache
from signoff.resolvers.approval.proposals import get_proposal
from signoff.resolvers.core.lifecycles import draft_session_key
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.drafts.reads import check_session_id

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


@dataclass(frozen=True)
class FeedScope:
    """What one subscription asked for: a queue, all queues, one proposal, incidents, or one
    account's drafts of one session (``session_key``, see ``draft_scope``)."""

    queue_id: str | None = None
    all_queues: bool = False
    proposal_id: str | None = None
    entity_type: str | None = None
    session_key: str | None = None

    def matches(self, change: Change) -> bool:
        if self.session_key is not None:
            return change.session_key == self.session_key
        if self.all_queues:
            return change.queue_id is not None
        if self.queue_id is not None:
            return change.queue_id == self.queue_id
        if self.proposal_id is not None:
            return change.proposal_id == self.proposal_id
        return change.entity_type == self.entity_type

    @property
    def only_proposal(self) -> str | None:
        """The proposal whose changes are the only ones this scope matches, if it is one."""
        if self.session_key is None and not self.all_queues and self.queue_id is None:
            return self.proposal_id
        return None

    def where(self, visibility: Visibility) -> list[Any]:
        """The same filter in SQL, for replay (visibility is re-checked per event)."""
        if self.session_key is not None:
            return [ChangeEvent.session_key == self.session_key]
        if self.all_queues:
            if visibility.sees_everything:
                return [col(ChangeEvent.queue_id).is_not(None)]
            return [col(ChangeEvent.queue_id).in_(sorted(visibility.queue_ids))]
        if self.queue_id is not None:
            return [ChangeEvent.queue_id == self.queue_id]
        if self.proposal_id is not None:
            return [ChangeEvent.proposal_id == self.proposal_id]
        return [ChangeEvent.entity_type == self.entity_type]


@dataclass(frozen=True)
class Visibility:
    """What one viewer may see of the feed, reduced to what decides it: the role, a reviewer's
    reachable queues, an agent's identity, the viewer's identity where the selection reads it
    (``identity``), and for drafts the account (always the viewer's own). Subscribers with
    equal visibilities (and the same document and variables) get the same frames, so a frame
    is computed once for all of them."""

    role: Role
    queue_ids: frozenset[str] = frozenset()
    actor_id: str | None = None
    drafts_of: str | None = None

    @classmethod
    def of(cls, viewer: Viewer, scope: FeedScope, *, identity: bool = False) -> Visibility:
        queue_ids: frozenset[str] = frozenset()
        if viewer.role is Role.REVIEWER:
            queue_ids = viewer.queue_ids
            if scope.queue_id is not None:
                queue_ids = queue_ids & {scope.queue_id}
        needs_identity = identity or viewer.role is Role.AGENT
        return cls(
            role=viewer.role,
            queue_ids=queue_ids,
            actor_id=viewer.id if needs_identity else None,
            drafts_of=viewer.id if scope.session_key is not None else None,
        )

    @property
    def sees_everything(self) -> bool:
        return self.role in STAFF

    def sees_object_in(self, queue_id: str | None) -> bool:
        """Whether an event may show its proposal or task as it is now, in ``queue_id``: a
        reviewer's events show it only while it is in one of their queues (an escalated
        task has left the queue its earlier events were about); other roles are not
        limited by queue."""
        return sees_now_in(self.role, self.queue_ids, queue_id)

    def allows(self, change: Change) -> bool:
        """Staff see everything; reviewers their queues' events; agents their own proposals';
        in a drafts subscription, every role sees its own account's drafts and nothing else."""
        if self.drafts_of is not None:
            return change.entity_type == "draft" and _account_of(change) == self.drafts_of
        owner_id = change.snapshot.get("proposedById")
        return sees(
            self.role, self.queue_ids, self.actor_id, queue_id=change.queue_id, owner_id=owner_id
        )


def _account_of(change: Change) -> str | None:
    """The account of a draft event: the part of its session key before the first colon
    (actor ids are UUIDs, so the session id after it may hold colons of its own)."""
    if change.session_key is None:
        return None
    account, _, _ = change.session_key.partition(":")
    return account


def draft_scope(viewer: Viewer, session_id: str) -> FeedScope:
    """``draftEvents(sessionId)``: the viewer's own drafts of that session, whatever its role."""
    return FeedScope(session_key=draft_session_key(viewer.id, check_session_id(session_id)))


async def authorize_scope(session: AsyncSession, viewer: Viewer, scope: FeedScope) -> None:
    """Refuse a subscription the viewer may not open, before it starts; reads only for a
    queue the viewer is not a member of and for a proposal."""
    require_scope_role(viewer, scope)
    if scope.queue_id is not None and scope.queue_id not in viewer.queue_ids:
        # A queue the viewer is a member of exists: no need to read it.
        await require_row(session, Queue, scope.queue_id, "No such queue.", field="queueId")
        if not viewer.can_see_queue(scope.queue_id):
            raise Forbidden("You are not a reviewer of this queue.")
    elif scope.proposal_id is not None:
        await get_proposal(session=session, viewer=viewer, proposal_id=scope.proposal_id)


def require_scope_role(viewer: Viewer, scope: FeedScope) -> None:
    """The role a scope needs, and for drafts that they are the viewer's own."""
    if scope.queue_id is not None or scope.all_queues:
        require_role(viewer, Role.REVIEWER, Role.OPERATOR)
    elif scope.session_key is not None:
        # Built from the viewer's own id (``draft_scope``): never another account's drafts.
        if not scope.session_key.startswith(f"{viewer.id}:"):
            raise Forbidden("You may follow only your own drafts.")
    elif scope.proposal_id is None:
        require_role(viewer, Role.OPERATOR)


@dataclass(frozen=True)
class FeedBounds:
    """The newest cursor handed out, and the newest one retention deleted."""

    last_cursor: int
    pruned_through: int


async def read_feed_bounds(sessionmaker: SessionMaker) -> FeedBounds:
    async with sessionmaker() as session:
        state = await feed.feed_state(session)
        bounds = FeedBounds(state.last_cursor, state.pruned_through)
        await session.commit()
    return bounds


class SharedFeedBounds:
    """The feed's bounds, read once for every resume that asks within ``seconds`` of a read (or
    during it), so a thousand consoles resuming read them once. Bounds a moment old are safe:
    a cursor above them is read again, and one that retention deletes after the read is caught
    by ``replay``, which checks pruning after every page."""

    def __init__(
        self,
        read: Callable[[], Awaitable[FeedBounds]],
        seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self._seconds = seconds
        self._clock = clock
        self._kept: tuple[float, FeedBounds] | None = None
        self._reading: asyncio.Future[FeedBounds] | None = None

    async def covering(self, cursor: int) -> FeedBounds:
        """Bounds read at most ``seconds`` ago whose last cursor is ``cursor`` or newer,
        if there are such; otherwise the bounds as they are now."""
        kept = self._kept
        fresh = kept is not None and self._clock() - kept[0] < self._seconds
        if kept is not None and fresh and cursor <= kept[1].last_cursor:
            return kept[1]
        bounds = await self._shared_read()
        if cursor > bounds.last_cursor:
            # That read may have begun before ``cursor`` was handed out: the next one began
            # after this caller asked.
            bounds = await self._shared_read()
        return bounds

    async def _shared_read(self) -> FeedBounds:
        if self._reading is None:
            self._reading = asyncio.ensure_future(self._read_now())
        # One caller going away (its socket closed) must not cancel the others' read.
        return await asyncio.shield(self._reading)

    async def _read_now(self) -> FeedBounds:
        started = self._clock()
        try:
            bounds = await self._read()
        finally:
            self._reading = None
        self._kept = (started, bounds)
        return bounds


async def resume_point(after: str, bounds: SharedFeedBounds) -> int:
    """The cursor to replay from; unknown cursors and cursors retention deleted are
    refused."""
    cursor = decode_cursor(after)
    known = await bounds.covering(cursor)
    if cursor > known.last_cursor:
        raise CursorInvalid("This cursor was not handed out by this change feed.")
    if cursor < known.pruned_through:
        raise CursorExpired()
    return cursor


def ensure_still_allowed(viewer: Viewer, scope: FeedScope) -> None:
    """After a viewer is re-read: a subscription ends when its viewer no longer has the
    role its scope needs, and a queue subscription when its viewer is no longer a
    reviewer of the queue (other scopes just see less, through ``Visibility``)."""
    require_scope_role(viewer, scope)
    if scope.queue_id is not None and not viewer.can_see_queue(scope.queue_id):
        raise Forbidden("You are no longer a reviewer of this queue.")


def concerns_access_of(change: Change, actor_ids: Container[str]) -> bool:
    """Whether ``change`` changes what one of ``actor_ids`` may see: a queue membership,
    its role, its disabling or one of its tokens."""
    return change.kind in ACCESS_KINDS and change.entity_id in actor_ids


def forget_changed_viewers(viewers: ViewerCache, change: Change) -> None:
    """A fanout listener: the viewers of an actor whose access changed are read again."""
    if change.kind in ACCESS_KINDS:
        viewers.forget_actor(change.entity_id)


async def replay(
    sessionmaker: SessionMaker,
    scope: FeedScope,
    visibility: Visibility,
    after: int,
    *,
    through: int | None = None,
) -> AsyncIterator[Change]:
    """The events after ``after`` (through ``through``) that the subscription would have
    received, in order; ``CursorExpired`` if retention deletes what it still has to read.

    Each page is read in a session of its own, closed before the page is handed on. The
    feed's pruning mark is read after the page: a prune that commits in between can only
    make the check stricter, never let a page with a hole through.
    """
    where = scope.where(visibility)
    while True:
        async with sessionmaker() as session:
            rows = await feed.events_after(session, after, through=through, where=where)
            pruned_through = (await feed.feed_state(session)).pruned_through
            await session.commit()
        if after < pruned_through:
            raise CursorExpired()
        for row in rows:
            change = Change.from_row(row)
            if visibility.allows(change):
                yield change
        if not rows:
            return
        assert rows[-1].cursor is not None
        after = rows[-1].cursor


async def current_cursor(*, session: AsyncSession, viewer: Viewer) -> str:
    """The newest cursor: read a queue, then subscribe ``after`` it, and miss nothing between."""
    state = await feed.feed_state(session)
    await session.commit()
    return encode_cursor(state.last_cursor)
