"""Broadcast groups: a subscription's selection is executed once per event for every
subscriber who would see the same thing, and the encoded payload is shared.

A group is keyed by document, variables without ``after``, scope and ``Visibility``; it
keeps its newest frames (``live.history``) for members that resume, and a member whose
access changes stops at once, then rejoins or ends (docs/design.md sections 8.3, 8.4).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import strawberry
from graphql import DocumentNode

from signoff.constants import FEED_BOUNDS_SECONDS, LIVE_FRAME_LOG_BYTES, LIVE_FRAME_LOG_SIZE
from signoff.database import SessionMaker
from signoff.errors import SubscriberTooSlow
from signoff.events.hub import Change, EventHub
from signoff.internals import core_schema
from signoff.live.history import Budget, FrameLog
from signoff.live.prepared_frames import Payload
from signoff.live.quota import LiveQuota
from signoff.live.rendering import FrameMaker, Frames
from signoff.live.selection import Selection, Selections
from signoff.resolvers.access.actors import authenticate_in
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.access.viewer_cache import ViewerCache
from signoff.resolvers.feed.subscriptions import (
    FeedScope,
    SharedFeedBounds,
    Visibility,
    authorize_scope,
    concerns_access_of,
    ensure_still_allowed,
    forget_changed_viewers,
    read_feed_bounds,
    replay,
    resume_point,
)
from signoff.schema.context import context_of
from signoff.schema.live import ScopeOf

logger = logging.getLogger("signoff.broadcast")

# Frames a member takes from the group's log at a time while it catches up.
CATCH_UP_SLICE = 64


@dataclass(frozen=True)
class GroupKey:
    selection: Selection
    scope: FeedScope
    visibility: Visibility


class Member:
    """One subscription (an operation on one connection) in a group."""

    __slots__ = (
        "_buffer",
        "_held",
        "_recheck",
        "_send",
        "_wakeup",
        "failed",
        "last",
        "suspended",
        "token",
        "viewer",
    )

    def __init__(
        self,
        send: Callable[[Payload], bool],
        viewer: Viewer,
        buffer: int,
        token: str,
    ) -> None:
        self._send = send
        self.viewer = viewer
        self.token = token
        self._buffer = buffer
        self.last = 0  # the last cursor handed to the connection
        self._held: list[tuple[int, Payload]] | None = []  # live frames held during a replay
        self.suspended = False
        self.failed: BaseException | None = None
        self._recheck = False  # the viewer must be re-read
        self._wakeup: asyncio.Future[None] | None = None

    def push(self, cursor: int, payload: Payload) -> None:
        if self.suspended or cursor <= self.last:
            return
        if self._held is not None:
            if len(self._held) >= self._buffer:
                self.fail(SubscriberTooSlow())
                return
            self._held.append((cursor, payload))
            return
        self._deliver(cursor, payload)

    def deliver_replayed(self, cursor: int, payload: Payload) -> None:
        if not self.suspended and cursor > self.last:
            self._deliver(cursor, payload)

    def go_live(self) -> None:
        """Send what was held during the replay (minus what it already sent), then stream.

        Sending never waits (a frame the client cannot take yet is queued on its
        connection), so no live frame can overtake the backlog meanwhile.
        """
        held, self._held = self._held or [], None
        for cursor, payload in held:
            if cursor > self.last:
                self._deliver(cursor, payload)

    def hold(self) -> None:
        """Hold live frames while (re)joining a group, until ``go_live``."""
        self._held = []
        self.suspended = False

    def suspend(self) -> None:
        """Stop receiving until the viewer is re-read (its access changed)."""
        self.suspended = True
        self._wake()

    def fail(self, error: BaseException) -> None:
        self.failed = error
        self.suspended = True
        self._wake()

    async def wait(self, seconds: float) -> None:
        """Until the viewer must be re-read, the member failed, or ``seconds`` passed."""
        if not self._recheck:
            loop = asyncio.get_running_loop()
            wakeup = self._wakeup = loop.create_future()
            # A timer that settles the future: lighter than ``asyncio.timeout`` for every
            # idle subscription of a process.
            timer = loop.call_later(seconds, _settle, wakeup)
            try:
                await wakeup
            finally:
                timer.cancel()
                self._wakeup = None
        self._recheck = False

    def _wake(self) -> None:
        self._recheck = True
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def _deliver(self, cursor: int, payload: Payload) -> None:
        self.last = cursor
        if not self._send(payload):
            self.fail(SubscriberTooSlow())


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Group:
    """The members that share one ``GroupKey``, fed by one hub subscriber, with the log
    of their newest frames."""

    def __init__(self, key: GroupKey, frames: Frames, broadcaster: Broadcaster) -> None:
        self.key = key
        self.frames = frames
        self.members: set[Member] = set()
        self.closed = False
        self._actors: Counter[str] = Counter()
        self._broadcaster = broadcaster
        # A proposal's group is offered only that proposal's changes (and access changes):
        # an event reaches its group by one lookup among thousands of waiting agents.
        self._subscriber = broadcaster.hub.subscribe(self._wants, key.scope.only_proposal)
        # Everything after the fanout's last cursor reaches this group's subscriber.
        self.log = FrameLog(broadcaster.hub.fanout.last, broadcaster.log_size, broadcaster.budget)
        self._reading_back = asyncio.Lock()
        self._task = asyncio.create_task(self._run(), name="signoff-broadcast-group")

    def add(self, member: Member) -> None:
        self.members.add(member)
        self._actors[member.viewer.id] += 1

    def discard(self, member: Member) -> None:
        if member in self.members:
            self.members.discard(member)
            self._actors[member.viewer.id] -= 1
            if self._actors[member.viewer.id] <= 0:
                del self._actors[member.viewer.id]
        if not self.members:
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._broadcaster.hub.unsubscribe(self._subscriber)
        self._broadcaster.forget(self)
        self.log.clear()
        if self._task is not asyncio.current_task():
            self._task.cancel()

    def visible(self, change: Change) -> bool:
        return self.key.scope.matches(change) and self.key.visibility.allows(change)

    async def read_back(self, after: int) -> bool:
        """Extend the log back to ``after`` (every event the group sees after it), read
        and rendered once for all the members that need it; ``False`` where that is more
        than the log holds (the member replays on its own)."""
        async with self._reading_back:
            since = self.log.since
            if after >= since:
                return True  # another member read it back meanwhile
            frames: list[tuple[int, Payload]] = []
            key = self.key
            changes = replay(
                self._broadcaster.read_sessionmaker, key.scope, key.visibility, after, through=since
            )
            size = 0
            async for change in changes:
                payload = await self.frames.render(change)
                frames.append((change.cursor, payload))
                size += payload.size
                if not self.log.fits(len(frames), size):
                    return False
            if self.log.since != since:
                return False  # the log moved on meanwhile: what was read no longer joins it
            self.log.prepend(after, frames)
            return True

    def _wants(self, change: Change) -> bool:
        return self.visible(change) or concerns_access_of(change, self._actors)

    async def _run(self) -> None:
        try:
            while True:
                await self._handle(await self._subscriber.get())
        except SubscriberTooSlow as exc:  # rendering fell behind the feed
            self._fail(exc)
        except Exception as exc:  # a bug: end the subscriptions rather than go silent
            logger.error("broadcast group failed: %s", type(exc).__name__)
            self._fail(exc)

    async def _handle(self, change: Change) -> None:
        if concerns_access_of(change, self._actors):
            for member in list(self.members):
                if member.viewer.id == change.entity_id:
                    member.suspend()
        if self.visible(change):
            payload = await self.frames.render(change)
            self.log.append(change.cursor, payload)
            for member in list(self.members):
                member.push(change.cursor, payload)

    def _fail(self, error: BaseException) -> None:
        self.close()
        for member in list(self.members):
            member.fail(error)


@dataclass(slots=True)
class Watch:
    """One subscription, as the websocket side hands it to the broadcaster."""

    viewer: Viewer
    token: str
    scope: FeedScope
    start: int | None
    send: Callable[[Payload], bool]
    wait_for_room: Callable[[], Awaitable[None]]
    is_closed: Callable[[], bool]


class Broadcaster:
    """The process's broadcast groups, and the life of each subscription in them."""

    def __init__(
        self,
        schema: strawberry.Schema,
        hub: EventHub,
        read_sessionmaker: SessionMaker,
        *,
        buffer: int,
        refresh_seconds: float,
        log_size: int = LIVE_FRAME_LOG_SIZE,
        log_bytes: int = LIVE_FRAME_LOG_BYTES,
        authenticate: Callable[[str], Awaitable[Viewer]] | None = None,
        quota: LiveQuota | None = None,
    ) -> None:
        self.hub = hub
        self.quota = quota  # subscriptions per token and actor, on every transport
        self._authenticate = authenticate or functools.partial(authenticate_in, read_sessionmaker)
        self.read_sessionmaker = read_sessionmaker
        self.log_size = log_size
        self.budget = Budget(log_bytes)
        self._buffer = buffer
        self._refresh_seconds = refresh_seconds
        self._groups: dict[GroupKey, Group] = {}
        self._executions_of_closed_groups = 0
        self.selections = Selections(core_schema(schema))
        self._frame_maker = FrameMaker(schema, read_sessionmaker)
        self._viewers = ViewerCache(refresh_seconds / 2)
        self._bounds = SharedFeedBounds(
            functools.partial(read_feed_bounds, read_sessionmaker), FEED_BOUNDS_SECONDS
        )
        hub.fanout.listen(functools.partial(forget_changed_viewers, self._viewers))

    @property
    def group_count(self) -> int:
        return len(self._groups)

    @property
    def subscriber_count(self) -> int:
        """Live subscriptions in this process, over all groups."""
        return sum(len(group.members) for group in self._groups.values())

    @property
    def executions(self) -> int:
        """Frames computed, over all groups ever (for tests and metrics)."""
        live = sum(group.frames.executions for group in self._groups.values())
        return self._executions_of_closed_groups + live

    def forget(self, group: Group) -> None:
        if self._groups.get(group.key) is group:
            del self._groups[group.key]
            self._executions_of_closed_groups += group.frames.executions

    async def follow(
        self,
        info: strawberry.Info,
        scope_of: ScopeOf,
        after: str | None,
        watch: Callable[[Viewer, str, FeedScope, int | None], Watch],
        *,
        counted: bool = False,
    ) -> None:
        """Authorise a subscription and serve it to its end (``prepare``, then what it
        returns). ``counted``: the transport holds its slot in the quota already."""
        ctx = context_of(info)
        viewer = await ctx.viewer()  # connection_init authenticated it
        assert ctx.token is not None
        slot = (
            None
            if self.quota is None or counted
            else self.quota.start_subscription(ctx.token, viewer.id)
        )
        try:
            serve = await self.prepare(info, scope_of, after, watch)
            await serve()
        finally:
            if slot is not None:
                slot.release()

    async def prepare(
        self,
        info: strawberry.Info,
        scope_of: ScopeOf,
        after: str | None,
        watch: Callable[[Viewer, str, FeedScope, int | None], Watch],
    ) -> Callable[[], Awaitable[None]]:
        """Authorise a subscription; what serves it (``serve``), which keeps nothing of
        ``info``. ``watch`` binds it to its socket. Only a queue the viewer is not a member
        of, or a proposal, is read; a resume checks its cursor against bounds shared by
        every resume of the moment."""
        ctx = context_of(info)
        viewer = await ctx.viewer()
        assert ctx.token is not None
        scope = scope_of if isinstance(scope_of, FeedScope) else scope_of(viewer)
        async with ctx.read_session() as session:
            await authorize_scope(session, viewer, scope)
            await session.commit()
        start = None if after is None else await resume_point(after, self._bounds)
        selection, document = self.selections.of(info)
        subscription = watch(viewer, ctx.token, scope, start)
        return functools.partial(self.serve, selection, document, subscription)

    async def serve(
        self, selection: Selection, document: DocumentNode, subscription: Watch
    ) -> None:
        """Run one subscription until it ends: catch up, live frames, viewer re-reads.

        Returns when the connection closes; raises the error that ended it otherwise
        (too slow, a token that is gone, a lost right to watch).
        """
        identity = self.selections.reads_viewer(selection, document)
        member = Member(subscription.send, subscription.viewer, self._buffer, subscription.token)
        group = self._join(member, selection, document, subscription.scope, identity)
        try:
            # Live from the head of the feed: a rejoin after an access change replays from
            # here, never from the feed's beginning. ``after``: nothing at or below it,
            # even what this process's fanout delivers late.
            start = subscription.start
            member.last = self.hub.fanout.last if start is None else start
            await self._catch_up(member, group, subscription.wait_for_room)
            while await self._wait(member, subscription):
                viewer = await self._viewer(subscription.token, fresh=member.suspended)
                ensure_still_allowed(viewer, subscription.scope)
                visibility = Visibility.of(viewer, subscription.scope, identity=identity)
                if not member.suspended and visibility == group.key.visibility:
                    continue
                group.discard(member)
                member.viewer = viewer
                group = self._join(member, selection, document, subscription.scope, identity)
                await self._catch_up(member, group, subscription.wait_for_room)
        finally:
            group.discard(member)

    async def _viewer(self, token: str, *, fresh: bool) -> Viewer:
        """The viewer behind ``token``, re-read at most once per half refresh period for all
        the subscriptions that present it; ``fresh`` reads it now (its access changed)."""
        read = functools.partial(self._authenticate, token)
        return await self._viewers.viewer(token, read, fresh=fresh)

    async def _wait(self, member: Member, subscription: Watch) -> bool:
        """Until the viewer must be re-read (``True``) or the connection closed (``False``)."""
        await member.wait(self._refresh_seconds)
        if member.failed is not None:
            raise member.failed
        return not subscription.is_closed()

    def _join(
        self,
        member: Member,
        selection: Selection,
        document: DocumentNode,
        scope: FeedScope,
        identity: bool,
    ) -> Group:
        key = GroupKey(selection, scope, Visibility.of(member.viewer, scope, identity=identity))
        group = self._groups.get(key)
        if group is None or group.closed:
            viewer = member.viewer if identity else None
            frames = self._frame_maker.frames(selection, document, viewer, key.visibility)
            group = self._groups[key] = Group(key, frames, self)
        member.hold()
        group.add(member)
        return group

    async def _catch_up(
        self, member: Member, group: Group, wait_for_room: Callable[[], Awaitable[None]]
    ) -> None:
        """Send ``member`` what it missed after ``member.last``, paced by its connection,
        then what was held meanwhile. A member whose access changed on the way stops
        where it is: it rejoins and catches up from there once its viewer is re-read."""
        position = member.last
        while not member.suspended:
            if position < group.log.since and not await group.read_back(position):
                position = await self._replay_alone(member, group, position, wait_for_room)
                continue
            frames = group.log.after(position, CATCH_UP_SLICE)
            if not frames:
                member.go_live()
                return
            for cursor, payload in frames:
                await wait_for_room()
                self._deliver_replayed(member, cursor, payload)
                position = cursor

    async def _replay_alone(
        self,
        member: Member,
        group: Group,
        after: int,
        wait_for_room: Callable[[], Awaitable[None]],
    ) -> int:
        """Replay what lies before the group's log on the member's own (more than the log
        holds); returns where the log takes over."""
        through = group.log.since
        key = group.key
        changes = replay(self.read_sessionmaker, key.scope, key.visibility, after, through=through)
        async for change in changes:
            await wait_for_room()
            self._deliver_replayed(member, change.cursor, await group.frames.render(change))
            if member.suspended:
                return member.last
        return through

    @staticmethod
    def _deliver_replayed(member: Member, cursor: int, payload: Payload) -> None:
        member.deliver_replayed(cursor, payload)
        if member.failed is not None:
            raise member.failed
