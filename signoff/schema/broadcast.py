"""Broadcast groups: a subscription's selection is executed once per event for every
subscriber who would see the same thing, and the encoded payload is shared.

A group is keyed by the subscription's document, operation name, variables, scope and
the subscriber's ``Visibility`` (role, reachable queues, identity where it matters).
For each change event the group checks visibility once, executes the selection once
in a short-lived read session that is closed before anything is sent, encodes the
payload once, and hands the same text to every member's connection, which sends it
with only the operation id differing.

A member replays what it missed (``after``) on its own before it goes live, with
live frames held back meanwhile and deduplicated by cursor at the seam. When a
member's queue memberships change (an event the group sees in feed order), the
member stops receiving at once, re-reads its viewer, and rejoins the group that
matches its new visibility by replaying from the last cursor it was sent.

Fields that read the viewer are marked ``viewer_dependent()``: a selection with such
a field is grouped per viewer. Any other field that tried to read the viewer in a
shared group would raise ``SharedViewerError`` instead of leaking.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import strawberry
from graphql import (
    BREAK,
    DocumentNode,
    ExecutionResult,
    FieldNode,
    GraphQLSchema,
    TypeInfo,
    TypeInfoVisitor,
    Visitor,
    execute_subscription_event,
    print_ast,
    visit,
)
from graphql.execution import Executor
from strawberry.schema.schema_converter import GraphQLCoreConverter

from signoff.database import SessionMaker
from signoff.errors import SubscriberTooSlow
from signoff.events.hub import Change, EventHub
from signoff.resolvers.access import Viewer
from signoff.resolvers.actors import authenticate_in
from signoff.resolvers.subscriptions import (
    FeedScope,
    Visibility,
    concerns_membership_of,
    ensure_still_allowed,
    replay,
)
from signoff.resolvers.viewer_cache import ViewerCache
from signoff.schema.change_event import ChangeEvent
from signoff.schema.context import VIEWER_DEPENDENT, Context
from signoff.schema.errors import mask_error
from signoff.schema.loaders import FeedLoaders
from signoff.schema.prepared_frames import Payload

logger = logging.getLogger("signoff.broadcast")


@dataclass(frozen=True)
class Selection:
    """One subscription operation: what every frame of a group is computed from."""

    query: str
    operation_name: str | None
    variables: str  # canonical JSON of the coerced variables

    @classmethod
    def of(cls, info: strawberry.Info) -> tuple[Selection, DocumentNode]:
        raw = info._raw_info
        document = DocumentNode(definitions=(raw.operation, *raw.fragments.values()))
        loc = raw.operation.loc
        query = loc.source.body if loc is not None else print_ast(document)
        name = raw.operation.name.value if raw.operation.name is not None else None
        variables = json.dumps(info.variable_values, sort_keys=True, default=str)
        return cls(query=query, operation_name=name, variables=variables), document


@dataclass(frozen=True)
class GroupKey:
    selection: Selection
    scope: FeedScope
    visibility: Visibility


def reads_viewer(schema: GraphQLSchema, document: DocumentNode) -> bool:
    """Whether the document selects any field marked ``viewer_dependent()``."""
    type_info = TypeInfo(schema)
    found = False

    class FindViewerFields(Visitor):
        def enter_field(self, node: FieldNode, *_: Any) -> Any:
            nonlocal found
            field_def = type_info.get_field_def()
            definition = (
                None
                if field_def is None
                else field_def.extensions.get(GraphQLCoreConverter.DEFINITION_BACKREF)
            )
            if definition is not None and definition.metadata.get(VIEWER_DEPENDENT):
                found = True
                return BREAK
            return None

    visit(document, TypeInfoVisitor(type_info, FindViewerFields()))
    return found


class Frames:
    """Executes one group's selection for an event and encodes the payload."""

    def __init__(
        self,
        executor: Executor[Any],
        make_context: Callable[[], Context],
    ) -> None:
        self._executor = executor
        self._make_context = make_context

    async def render(self, change: Change) -> Payload:
        """The encoded ``payload`` of the frame for ``change``; the session is closed first."""
        context = self._make_context()
        executor = self._executor.build_per_event_executor(ChangeEvent.from_change(change))
        executor.context_value = context
        try:
            outcome: Any = execute_subscription_event(executor)
            result: ExecutionResult = await outcome if executor.is_awaitable(outcome) else outcome
        finally:
            await context.close()
        payload: dict[str, Any] = {"data": result.data}
        if result.errors:
            payload["errors"] = [mask_error(e, context.request_id).formatted for e in result.errors]
        return Payload(json.dumps(payload, separators=(",", ":")))


class Member:
    """One subscription (an operation on one connection) in a group."""

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
        if cursor > self.last:
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
        """Stop receiving until the viewer is re-read (its memberships changed)."""
        self.suspended = True
        self._wake()

    def fail(self, error: BaseException) -> None:
        self.failed = error
        self.suspended = True
        self._wake()

    async def wait(self, seconds: float) -> None:
        """Until the viewer must be re-read, the member failed, or ``seconds`` passed."""
        if not self._recheck:
            self._wakeup = asyncio.get_running_loop().create_future()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await self._wakeup
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


class Group:
    """The members that share one ``GroupKey``, fed by one hub subscriber."""

    def __init__(self, key: GroupKey, frames: Frames, broadcaster: Broadcaster) -> None:
        self.key = key
        self.frames = frames
        self.members: set[Member] = set()
        self.closed = False
        self._actors: Counter[str] = Counter()
        self._broadcaster = broadcaster
        self._subscriber = broadcaster.hub.subscribe(self._wants)
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
        if self._task is not asyncio.current_task():
            self._task.cancel()

    def visible(self, change: Change) -> bool:
        return self.key.scope.matches(change) and self.key.visibility.allows(change)

    def _wants(self, change: Change) -> bool:
        return self.visible(change) or concerns_membership_of(change, self._actors)

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
        if concerns_membership_of(change, self._actors):
            for member in list(self.members):
                if member.viewer.id == change.entity_id:
                    member.suspend()
        if self.visible(change):
            payload = await self._render(change)
            for member in list(self.members):
                member.push(change.cursor, payload)

    def _fail(self, error: BaseException) -> None:
        self.close()
        for member in list(self.members):
            member.fail(error)

    async def _render(self, change: Change) -> Payload:
        self._broadcaster.executions += 1
        try:
            return await self.frames.render(change)
        except Exception as exc:  # a frame must never end the group
            logger.error("rendering a frame failed: %s", type(exc).__name__)
            return Payload(_FAILED_FRAME)


_FAILED_FRAME = json.dumps(
    {"data": None, "errors": [{"message": "Unexpected error.", "extensions": {"code": "INTERNAL"}}]}
)


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
    ) -> None:
        self.hub = hub
        self._schema = schema
        self.executions = 0  # frames computed, over all groups (for tests and metrics)
        self._read_sessionmaker = read_sessionmaker
        self._feed_loaders = FeedLoaders(read_sessionmaker)
        self._buffer = buffer
        self._refresh_seconds = refresh_seconds
        self._groups: dict[GroupKey, Group] = {}
        self._reads_viewer: dict[Selection, bool] = {}
        self._viewers = ViewerCache(refresh_seconds / 2)

    @property
    def group_count(self) -> int:
        return len(self._groups)

    @property
    def subscriber_count(self) -> int:
        """Live subscriptions in this process, over all groups."""
        return sum(len(group.members) for group in self._groups.values())

    def forget(self, group: Group) -> None:
        if self._groups.get(group.key) is group:
            del self._groups[group.key]

    async def serve(self, info: strawberry.Info, subscription: Watch) -> None:
        """Run one subscription until it ends: replay, live frames, viewer re-reads.

        Returns when the connection closes; raises the error that ended it otherwise
        (too slow, a revoked token, a lost queue).
        """
        selection, document = Selection.of(info)
        identity = self._selection_reads_viewer(selection, document)
        member = Member(subscription.send, subscription.viewer, self._buffer, subscription.token)
        group = self._join(member, selection, document, subscription.scope, identity)
        try:
            if subscription.start is None:
                # Live from the head of the feed: a rejoin after a membership change replays
                # from here, never from the feed's beginning.
                member.last = self.hub.fanout.last
            else:
                # Nothing at or below ``after``, even what this process's fanout delivers late.
                member.last = subscription.start
                if subscription.start < self.hub.fanout.last:
                    # Otherwise nothing after ``after`` has reached this process yet: all of
                    # it is still to come through the fanout, whose group this member joined.
                    await self._catch_up(
                        member, group, subscription.start, subscription.wait_for_room
                    )
            member.go_live()
            while await self._wait(member, subscription):
                viewer = await self._viewer(subscription.token, fresh=member.suspended)
                ensure_still_allowed(viewer, subscription.scope)
                visibility = Visibility.of(viewer, subscription.scope, identity=identity)
                if not member.suspended and visibility == group.key.visibility:
                    continue
                group.discard(member)
                member.viewer = viewer
                group = self._join(member, selection, document, subscription.scope, identity)
                await self._catch_up(member, group, member.last, subscription.wait_for_room)
                member.go_live()
        finally:
            group.discard(member)

    async def _viewer(self, token: str, *, fresh: bool) -> Viewer:
        """The viewer behind ``token``, re-read at most once per half refresh period for all
        the subscriptions that present it (a revoked token still ends them all within one
        period); ``fresh`` reads it now (its memberships changed)."""

        read = functools.partial(authenticate_in, self._read_sessionmaker, token)
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
            frames = self._frames(selection, document, viewer, key.visibility)
            group = self._groups[key] = Group(key, frames, self)
        member.hold()
        group.add(member)
        return group

    async def _catch_up(
        self,
        member: Member,
        group: Group,
        after: int,
        wait_for_room: Callable[[], Awaitable[None]],
    ) -> None:
        """Replay what ``member`` missed after ``after``, one frame at a time, paced by its
        connection; live frames are held meanwhile."""
        key = group.key
        async for change in replay(self._read_sessionmaker, key.scope, key.visibility, after):
            await wait_for_room()
            member.deliver_replayed(change.cursor, await group.frames.render(change))
            if member.failed is not None:
                raise member.failed

    def _selection_reads_viewer(self, selection: Selection, document: DocumentNode) -> bool:
        if selection not in self._reads_viewer:
            self._reads_viewer[selection] = reads_viewer(self._schema._schema, document)
        return self._reads_viewer[selection]

    def _frames(
        self,
        selection: Selection,
        document: DocumentNode,
        viewer: Viewer | None,
        visibility: Visibility,
    ) -> Frames:
        executor = self._schema.execution_context_class.build(
            self._schema._schema,
            document,
            raw_variable_values=json.loads(selection.variables),
            operation_name=selection.operation_name,
        )
        assert not isinstance(executor, list)  # Strawberry validated the document already

        def make_context() -> Context:
            return Context(
                sessionmaker=self._read_sessionmaker,
                read_sessionmaker=self._read_sessionmaker,
                token=None,
                feed_loaders=self._feed_loaders,
                feed_visibility=visibility,
                shared_viewer=viewer is None,
                _viewer=viewer,
            )

        return Frames(executor, make_context)


@dataclass
class Watch:
    """One subscription, as the websocket side hands it to the broadcaster."""

    viewer: Viewer
    token: str
    scope: FeedScope
    start: int | None
    send: Callable[[Payload], bool]
    wait_for_room: Callable[[], Awaitable[None]]
    is_closed: Callable[[], bool]
