"""The websocket side of subscriptions: one writer per connection, and the two protocols.

Everything a connection sends leaves in order. A frame is written at once while the
client keeps up; one that would wait goes into the connection's bounded queue, drained by
its own writer, so a shared broadcast never waits for one client. A connection that falls
``frame_limit`` frames or ``byte_limit`` bytes behind is closed with 4429 (docs/design.md
section 8.5).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

import strawberry
from graphql import GraphQLFormattedError
from starlette.websockets import WebSocket, WebSocketState
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http.async_base_view import AsyncBaseHTTPView
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import Operation
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    CompleteMessage,
    ErrorMessage,
    PingMessage,
    PongMessage,
    SubscribeMessage,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    ConnectionInitMessage as TransportInitMessage,
)
from strawberry.subscriptions.protocols.graphql_ws.types import (
    ConnectionInitMessage,
    StartMessage,
)
from strawberry.subscriptions.protocols.graphql_ws.types import ErrorMessage as LegacyErrorMessage
from strawberry.types import ExecutionResult

from signoff.constants import (
    LIVE_REFUSAL_PAUSE_SECONDS,
    SUBSCRIBER_BUFFER_BYTES,
    WS_CLOSE_FORBIDDEN,
    WS_CLOSE_FORBIDDEN_REASON,
    WS_CLOSE_NO_PONG,
    WS_CLOSE_NO_PONG_REASON,
    WS_CLOSE_TOO_SLOW,
    WS_CLOSE_TOO_SLOW_REASON,
)
from signoff.errors import TooManySubscriptions, Unauthenticated
from signoff.internals import (
    ASGIWebSocketAdapter,
    BaseGraphQLTransportWSHandler,
    BaseGraphQLWSHandler,
)
from signoff.live.backlog import Backlog
from signoff.live.broadcast import Broadcaster, Watch
from signoff.live.keepalive import KeepAlive
from signoff.live.prepared_frames import Payload, SocketWriter, text_frame
from signoff.live.quota import LiveQuota, Slot
from signoff.live.reclaim import MemoryReclaim
from signoff.live.turnstile import GATE, Gate
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.feed.subscriptions import FeedScope
from signoff.schema.context import Context
from signoff.schema.live import Detached, ScopeOf
from signoff.schema.serving.operation import finish_detached, stream_error
from signoff.schema.serving.persisted import PersistedQueries, Refused
from signoff.schema.subscription import LiveEventsUnavailable

logger = logging.getLogger("signoff.websocket")

# The id of the operation being served, set by the protocol handlers for the task that
# runs it: a subscription's frames carry it.
OPERATION_ID: ContextVar[str | None] = ContextVar("signoff_operation_id", default=None)

# How long a close may wait for a client that does not read before the connection is
# given up on our side.
CLOSE_TIMEOUT_SECONDS = 5.0
DEFAULT_FRAME_LIMIT = 256
PING: PingMessage = {"type": "ping"}


class Connection(ASGIWebSocketAdapter):
    """One websocket. Everything it sends leaves in order: at once while the client keeps
    up, through this connection's own queue and writer task while it does not."""

    def __init__(
        self,
        view: AsyncBaseHTTPView[Any, Any, Any, Any, Any, Any, Any],
        request: WebSocket,
        response: WebSocket,
    ) -> None:
        super().__init__(view, request, response)
        open_connections = getattr(view, "open_connections", None)
        if isinstance(open_connections, weakref.WeakSet):
            open_connections.add(self)  # closed with 1001 when the server shuts down
        self._backlog = Backlog(
            getattr(view, "frame_limit", DEFAULT_FRAME_LIMIT),
            getattr(view, "byte_limit", SUBSCRIBER_BUFFER_BYTES),
        )
        self.frame_type = "next"  # graphql-transport-ws; the legacy protocol says "data"
        # Whether an authorised subscription is handed over to the protocol handler
        # (``TransportWSHandler``) rather than served inside Strawberry's operation.
        self.detaching = False
        self.closed = False
        # Kept small: a server holds thousands of these, nearly all of them idle.
        self._items: list[tuple[str | None, str]] = []  # what waits for the writer
        self._sending = False  # the writer is in the middle of a send
        self._close_request: tuple[int, str] | None = None
        self._writer: asyncio.Task[None] | None = None
        self._closing: asyncio.Task[None] | None = None
        self._expiry: asyncio.TimerHandle | None = None  # ``end_at``'s close
        self._slot: Slot | None = None  # counted against its token's and actor's sockets
        # Operation id -> its subscription slot, taken at its subscribe message.
        self._operation_slots: dict[str, Slot] = {}
        self._prefixes: dict[str, str] = {}  # operation id -> the frame's opening bytes
        # Out of the scope, which the server's connection keeps: the gate keeps the
        # connection's receive, and the three would be a reference cycle.
        gate = request.scope.pop(GATE, None)
        self.gate = gate if isinstance(gate, Gate) else None  # turns until acknowledged
        self._socket = SocketWriter.of(request.scope)  # None: every frame goes through ASGI
        if self._socket is not None:
            self._socket.settle()  # Strawberry accepted the socket before this
        broadcaster = getattr(view, "broadcaster", None)
        self._broadcaster = broadcaster if isinstance(broadcaster, Broadcaster) else None
        quota = getattr(view, "live_quota", None)
        self._quota = quota if isinstance(quota, LiveQuota) else None
        reclaim = getattr(view, "memory_reclaim", None)
        self.reclaim = reclaim if isinstance(reclaim, MemoryReclaim) else None

    # The subscription fields' interface (``schema.live.LiveSocket``).
    async def follow(self, info: strawberry.Info, scope: ScopeOf, after: str | None) -> None:
        """Serve one subscription on this socket. When the token the socket authenticated
        with is gone, every operation on it ends: the socket closes with 4403. Where the
        protocol handler takes subscriptions over (``detaching``), an authorised one is
        handed over (``Detached``) rather than served inside Strawberry's operation."""
        operation_id = OPERATION_ID.get()
        broadcaster = self._broadcaster
        if broadcaster is None or operation_id is None:
            raise LiveEventsUnavailable()
        watch = functools.partial(self._watch, operation_id)
        counted = operation_id in self._operation_slots
        if not self.detaching or not (counted or broadcaster.quota is None):
            follow = functools.partial(
                broadcaster.follow, info, scope, after, watch, counted=counted
            )
            await self.serve(operation_id, follow)
            return
        try:
            serve = await broadcaster.prepare(info, scope, after, watch)
        except Unauthenticated:
            await self.close(WS_CLOSE_FORBIDDEN, WS_CLOSE_FORBIDDEN_REASON)
            return
        raise Detached(functools.partial(self.serve, operation_id, serve))

    async def serve(self, operation_id: str, serve: Callable[[], Awaitable[None]]) -> None:
        """Run a subscription's ``serve`` with its frames going out as ``operation_id``'s."""
        self.activate(operation_id)
        try:
            await serve()
        except Unauthenticated:
            await self.close(WS_CLOSE_FORBIDDEN, WS_CLOSE_FORBIDDEN_REASON)
        finally:
            self.deactivate(operation_id)

    def _watch(
        self, operation_id: str, viewer: Viewer, token: str, scope: FeedScope, start: int | None
    ) -> Watch:
        return Watch(
            viewer=viewer,
            token=token,
            scope=scope,
            start=start,
            send=functools.partial(self.send_frame, operation_id),
            wait_for_room=self.wait_for_room,
            is_closed=lambda: self.closed,
        )

    # Strawberry's protocol messages.
    async def send_json(self, message: Any) -> None:
        self.send_now(message)

    def send_now(self, message: Any) -> None:
        """Send a protocol message in order with everything else, without waiting."""
        if not self.closed and self._close_request is None:
            encoded = self.view.encode_json(message)
            self._send(None, encoded if isinstance(encoded, str) else encoded.decode())

    def send_ping(self) -> None:
        """The keep-alive's ping, as ``send_now`` sends it: while nothing waits in this
        connection's queue, the same frame, framed once for every connection, is written
        straight to the socket. A process pings each of thousands of sockets every period."""
        if self.closed or self._close_request is not None:
            return
        encoded = self.view.encode_json(PING)
        text = encoded.encode() if isinstance(encoded, str) else encoded
        if (
            self._socket is not None
            and not self._items
            and not self._sending
            and self._socket.write_framed(text_frame(text))
        ):
            return
        self._send(None, text.decode())

    async def close(self, code: int, reason: str) -> None:
        """Close after what was queued before; a client that does not read is cut off."""
        if self.closed or self._close_request is not None:
            return
        self._close_request = (code, reason)
        writer = self._wake_writer()
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_SECONDS):
                await asyncio.shield(writer)
        except TimeoutError:
            self._give_up()

    def hold(self, slot: Slot) -> None:
        """Count this socket against its token and actor until it ends (a second
        ``connection_init`` of the legacy protocol, with another token, replaces it)."""
        if self._slot is not None:
            self._slot.release()
        elif self.reclaim is not None:
            self.reclaim.opened()
        self._slot = slot

    def count_operation(self, operation_id: str, context: object) -> bool:
        """Count an operation against its token's and actor's subscriptions from its
        subscribe message on (``False``: over a bound), so that one over a bound is refused
        before anything is spent on it: no task, no parsed document. A query over the
        socket counts while it runs, as the socket's own limit counts it."""
        if self._quota is None or not isinstance(context, Context):
            return True
        viewer = context._viewer
        if context.token is None or viewer is None:
            return True  # not acknowledged: Strawberry refuses it
        if self._quota.subscriptions_full(context.token, viewer.id):
            return False
        old = self._operation_slots.pop(operation_id, None)
        if old is not None:
            old.release()
        self._operation_slots[operation_id] = self._quota.start_subscription(
            context.token, viewer.id
        )
        return True

    def operation_started(self, operation_id: str, task: asyncio.Task[Any] | None) -> None:
        """The operation's slot is given back when its task ends (at once without one)."""
        slot = self._operation_slots.get(operation_id)
        if slot is None:
            return
        if task is None:
            self._release_operation(operation_id, slot)
        else:
            task.add_done_callback(lambda _: self._release_operation(operation_id, slot))

    def too_many_subscriptions(self) -> GraphQLFormattedError:
        assert self._quota is not None
        refusal = self._quota.too_many_subscriptions()
        return {"message": refusal.message, "extensions": refusal.extensions}

    def _release_operation(self, operation_id: str, slot: Slot) -> None:
        slot.release()
        if self._operation_slots.get(operation_id) is slot:
            del self._operation_slots[operation_id]

    def end_at(self, expires_at: float) -> None:
        """Close with 4403 at ``expires_at`` (epoch seconds): the token the socket
        authenticated with (an identity provider's access token) ends then, and no frame
        may leave after it, whatever the period of the viewer's re-reads."""
        if self._expiry is not None:
            self._expiry.cancel()
        delay = max(0.0, expires_at - time.time())
        self._expiry = asyncio.get_running_loop().call_later(delay, self._expire)

    def _expire(self) -> None:
        self.close_soon(WS_CLOSE_FORBIDDEN, WS_CLOSE_FORBIDDEN_REASON)

    def close_soon(self, code: int, reason: str) -> None:
        """``close`` in a task of its own, which ``stop`` waits for."""
        if self._closing is None and not self.closed:
            self._closing = asyncio.create_task(self.close(code, reason))

    # Live frames.
    def activate(self, operation_id: str) -> None:
        encoded_id = json.dumps(operation_id)
        self._prefixes[operation_id] = f'{{"id":{encoded_id},"type":"{self.frame_type}","payload":'

    def deactivate(self, operation_id: str) -> None:
        self._prefixes.pop(operation_id, None)

    def send_frame(self, operation_id: str, payload: Payload) -> bool:
        """Send a live frame at once, or queue it; ``False`` once cut off. Never waits: one
        pass sends a frame to thousands of connections. While nothing waits in this
        connection's queue, the prepared frame is written straight to the socket."""
        prefix = self._prefixes.get(operation_id)
        if prefix is None or self.closed or self._close_request is not None:
            return False
        if (
            self._socket is not None
            and not self._items
            and not self._sending
            and self._socket.write(payload, prefix)
        ):
            return True
        return self._send(operation_id, payload.message(prefix))

    async def wait_for_room(self) -> None:
        """Until at most half of either bound waits (paces a replay to the client)."""
        await self._backlog.wait_for_room(lambda: self.closed)

    def cut_off(self) -> None:
        """The client fell too far behind: free the queue, close with 4429."""
        if self.closed:
            return
        logger.info("closing a subscriber that fell behind")
        self._give_up()
        self._closing = asyncio.create_task(
            self._close_quietly(WS_CLOSE_TOO_SLOW, WS_CLOSE_TOO_SLOW_REASON)
        )

    async def stop(self) -> None:
        """The connection ended: stop the writer and drop what is left."""
        if self._expiry is not None:
            self._expiry.cancel()
        if self._slot is not None:
            self._slot.release()
            self._slot = None
            if self.reclaim is not None:
                self.reclaim.closed()
        for slot in self._operation_slots.values():
            slot.release()
        self._operation_slots.clear()
        self._give_up()
        if self._closing is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._closing

    def _send(self, operation_id: str | None, text: str) -> bool:
        if not self._items and not self._sending and self._send_without_waiting(text):
            return True
        if self.closed:
            return False
        if operation_id is not None:
            if not self._backlog.admits(len(text)):
                self.cut_off()
                return False
            self._backlog.add(len(text))
        self._items.append((operation_id, text))
        self._wake_writer()
        return True

    def _send_without_waiting(self, text: str) -> bool:
        """Send ``text`` if the socket takes it at once; ``False``, with nothing sent, if the send
        would wait for a client that is not reading (the caller may be sending to a thousand
        sockets). The send is stepped once by hand, as an eager task would be: it can suspend only
        at the server's wait for the socket to drain (uvicorn's ``writable``), before writing
        anything, and is then closed there, which unregisters the wait and writes nothing."""
        send = self.ws.send_text(text)
        try:
            send.send(None)
        except StopIteration:
            return True
        except Exception as exc:  # the client went away: nothing more can be sent
            logger.debug("websocket send failed: %s", type(exc).__name__)
            self._give_up()
            return False
        send.close()
        return False

    def _give_up(self) -> None:
        self.closed = True
        self._items.clear()
        self._backlog.clear()
        if self._writer is not None and self._writer is not asyncio.current_task():
            self._writer.cancel()

    def _wake_writer(self) -> asyncio.Task[None]:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write(), name="signoff-ws-writer")
        return self._writer

    async def _write(self) -> None:
        """Drain the queue, waiting for the client as long as it takes, then end."""
        try:
            while self._items and not self.closed:
                await self._send_next()
            if self._close_request is not None and not self.closed:
                code, reason = self._close_request
                self.closed = True
                await self.ws.close(code=code, reason=reason)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the client went away: nothing more can be sent
            logger.debug("websocket send failed: %s", type(exc).__name__)
            self._give_up()

    async def _send_next(self) -> None:
        operation_id, text = self._items.pop(0)
        if operation_id is not None:
            self._backlog.remove(len(text))
            if operation_id not in self._prefixes:
                return  # completed since: a frame after `complete` would confuse clients
        self._sending = True
        try:
            await self.ws.send_text(text)
        finally:
            self._sending = False

    async def _close_quietly(self, code: int, reason: str) -> None:
        if self.ws.application_state == WebSocketState.DISCONNECTED:
            return
        with contextlib.suppress(Exception):
            async with asyncio.timeout(CLOSE_TIMEOUT_SECONDS):
                await self.ws.close(code=code, reason=reason)


async def close_all(connections: weakref.WeakSet[Connection], code: int, reason: str) -> None:
    """Close every open connection at once; a client that does not read is cut off after
    ``CLOSE_TIMEOUT_SECONDS``."""
    await asyncio.gather(
        *(connection.close(code, reason) for connection in list(connections)),
        return_exceptions=True,
    )


async def _stop(websocket: Any) -> None:
    """The connection ended: stop its writer and drop what is queued."""
    if isinstance(websocket, Connection):
        await websocket.stop()


def _acknowledged(websocket: Any, acknowledged: bool) -> None:
    """An acknowledged socket's messages no longer take turns (``live.turnstile``)."""
    if acknowledged and isinstance(websocket, Connection) and websocket.gate is not None:
        websocket.gate.open()


async def _turn(websocket: Any) -> None:
    """A subscription's set-up waits for its turn of the loop (``live.turnstile``): a
    storm's hundreds of them do not all start in one turn."""
    if isinstance(websocket, Connection) and websocket.gate is not None:
        await websocket.gate.turn()


def _bind(context: Any, websocket: Any, frame_type: str) -> None:
    if isinstance(context, Context) and isinstance(websocket, Connection):
        websocket.frame_type = frame_type
        context.live = websocket


def too_many_operations(limit: int) -> GraphQLFormattedError:
    """The error sent for an operation over the connection's limit (the socket stays open)."""
    refusal = TooManySubscriptions(
        f"This connection already runs {limit} operations, the limit; complete one or open "
        "another connection."
    )
    return {"message": refusal.message, "extensions": refusal.extensions}


def persisted_document(view: Any, payload: Any) -> str | None:
    """The document a subscribe message runs under the view's persisted queries (``None``:
    as sent); raises ``Refused`` as HTTP would, so the allow-list covers websockets too."""
    queries = getattr(view, "persisted_queries", None)
    if not isinstance(queries, PersistedQueries) or not isinstance(payload, dict):
        return None
    return queries.document(payload)


def refused_error(refused: Refused) -> GraphQLFormattedError:
    """A persisted-query refusal as an operation's error (the socket stays open)."""
    return {"message": refused.message, "extensions": {"code": refused.code}}


class TransportWSHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """graphql-transport-ws, with every send through the connection's writer.

    Once acknowledged, the server pings every ``view.ws_keep_alive.seconds`` (one timer for
    every socket, ``live.keepalive``); a client that has not answered the previous ping by
    the next one is closed with 4410.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _bind(self.context, self.websocket, "next")
        if isinstance(self.websocket, Connection):
            self.websocket.detaching = getattr(self.view, "detach_subscriptions", True) is True
        keep_alive = getattr(self.view, "ws_keep_alive", None)
        self.keep_alive = keep_alive if isinstance(keep_alive, KeepAlive) else None
        self.awaiting_pong = False

    async def handle(self) -> None:
        if self.keep_alive is not None and isinstance(self.websocket, Connection):
            self.keep_alive.add(self)
        # Served in this frame, not in a helper's: a frame waits with each connection.
        try:
            await super().handle()
        finally:
            try:
                await _stop(self.websocket)
            finally:
                if self.keep_alive is not None:
                    self.keep_alive.discard(self)

    def beat(self) -> bool:
        """The keep-alive timer's visit: ping, or close 4410 when the last ping got no pong
        (``False``: no more visits)."""
        assert isinstance(self.websocket, Connection)
        if self.websocket.closed:
            return False
        if not self.connection_acknowledged:
            return True
        if self.awaiting_pong:
            self.websocket.close_soon(WS_CLOSE_NO_PONG, WS_CLOSE_NO_PONG_REASON)
            return False
        self.awaiting_pong = True
        self.websocket.send_ping()
        return True

    async def handle_pong(self, message: PongMessage) -> None:
        self.awaiting_pong = False

    async def handle_connection_init_timeout(self) -> None:
        """Strawberry's, but a ``connection_init`` that came in time and waits for its turn
        (``live.turnstile``) is not timed out: the wait is the server's."""
        await asyncio.sleep(self.connection_init_wait_timeout.total_seconds())
        gate = self.websocket.gate if isinstance(self.websocket, Connection) else None
        if gate is not None:
            await gate.through()
        if self.connection_init_received:
            return
        self.connection_timed_out = True
        await self.websocket.close(code=4408, reason="Connection initialisation timeout")

    async def handle_connection_init(self, message: TransportInitMessage) -> None:
        await super().handle_connection_init(message)
        _acknowledged(self.websocket, self.connection_acknowledged)
        # Strawberry cancels its wait for this message but keeps the task for the
        # socket's life; a task that is done has nothing left to cancel at shutdown.
        timeout = self.connection_init_timeout_task
        if timeout is not None and timeout.done():
            self.connection_init_timeout_task = None

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        await _turn(self.websocket)
        limit = self.max_subscriptions_per_connection
        if (
            limit is not None
            and self.connection_acknowledged
            and message["id"] not in self.operations
            and len(self.operations) >= limit
        ):
            error = too_many_operations(limit)
            await self.send_message(ErrorMessage(id=message["id"], type="error", payload=[error]))
            return
        if self.connection_acknowledged and message["id"] not in self.operations:
            if not await self._counted(message["id"]):
                return
            try:
                document = persisted_document(self.view, message.get("payload"))
            except Refused as refused:
                self._started(message["id"], None)
                error = refused_error(refused)
                await self.send_message(
                    ErrorMessage(id=message["id"], type="error", payload=[error])
                )
                return
            if document is not None:
                message["payload"]["query"] = document
            await super().handle_subscribe(message)
            operation = self.operations.get(message["id"])
            self._started(message["id"], None if operation is None else operation.task)
            return
        await super().handle_subscribe(message)

    async def _counted(self, operation_id: str) -> bool:
        """Whether the operation got its subscription slot; if not, it was refused, and
        this socket's next message waits (``LIVE_REFUSAL_PAUSE_SECONDS``)."""
        websocket = self.websocket
        if not isinstance(websocket, Connection) or websocket.count_operation(
            operation_id, self.context
        ):
            return True
        error = websocket.too_many_subscriptions()
        await self.send_message(ErrorMessage(id=operation_id, type="error", payload=[error]))
        await asyncio.sleep(LIVE_REFUSAL_PAUSE_SECONDS)
        return False

    def _started(self, operation_id: str, task: asyncio.Task[Any] | None) -> None:
        if isinstance(self.websocket, Connection):
            self.websocket.operation_started(operation_id, task)

    async def run_operation(self, operation: Operation[Context, None]) -> None:
        OPERATION_ID.set(operation.id)
        try:
            await super().run_operation(operation)
            return
        except Detached as detached:
            # Strawberry's operation has ended (its frames, contexts and hooks go with the
            # exception); only what serves the subscription stays.
            serve, name = detached.serve, detached.operation_name
        await self._serve_detached(operation, serve, name)

    async def _serve_detached(
        self,
        operation: Operation[Context, None],
        serve: Callable[[], Awaitable[None]],
        name: str | None,
    ) -> None:
        """Serve a handed-over subscription to its end, and end it as Strawberry ends a
        subscription's stream: an error as a ``next`` with ``errors``, then ``complete``
        (a cancellation, from the client's ``complete`` or the socket's end, sends nothing)."""
        errors = []
        try:
            await serve()
        except Exception as exc:
            errors.append(stream_error(exc, self.context))
            await operation.send_next(ExecutionResult(data=None, errors=errors))
        await finish_detached(name, errors, self.context)
        await operation.send_operation_message(CompleteMessage(id=operation.id, type="complete"))


class LegacyWSHandler(BaseGraphQLWSHandler[Context, None]):
    """The legacy ``graphql-ws`` protocol: frames are ``data`` messages, and a bad token is
    refused like graphql-transport-ws: ``connection_error``, then close 4403 (Strawberry's
    default closes 1011)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _bind(self.context, self.websocket, "data")

    async def handle(self) -> None:
        try:
            await super().handle()
        finally:
            await _stop(self.websocket)

    async def handle_start(self, message: StartMessage) -> None:
        await _turn(self.websocket)
        limit = self.max_subscriptions_per_connection
        if (
            limit is not None
            and self.connection_acknowledged
            and message["id"] not in self.tasks
            and len(self.tasks) >= limit
        ):
            payload = too_many_operations(limit)
            await self.send_message(
                LegacyErrorMessage(type="error", id=message["id"], payload=payload)
            )
            return
        if self.connection_acknowledged:
            websocket = self.websocket if isinstance(self.websocket, Connection) else None
            if websocket is not None and not websocket.count_operation(message["id"], self.context):
                error = websocket.too_many_subscriptions()
                await self.send_message(
                    LegacyErrorMessage(type="error", id=message["id"], payload=error)
                )
                await asyncio.sleep(LIVE_REFUSAL_PAUSE_SECONDS)
                return
            try:
                document = persisted_document(self.view, message.get("payload"))
            except Refused as refused:
                if websocket is not None:
                    websocket.operation_started(message["id"], None)
                await self.send_message(
                    LegacyErrorMessage(
                        type="error", id=message["id"], payload=refused_error(refused)
                    )
                )
                return
            if document is not None:
                message["payload"]["query"] = document
            await super().handle_start(message)
            if websocket is not None:
                websocket.operation_started(message["id"], self.tasks.get(message["id"]))
            return
        await super().handle_start(message)

    async def handle_async_results(
        self,
        operation_id: str,
        query: str,
        operation_name: str | None,
        variables: dict[str, object] | None,
    ) -> None:
        OPERATION_ID.set(operation_id)
        await super().handle_async_results(operation_id, query, operation_name, variables)

    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        payload = message.get("payload")
        if isinstance(self.context, Context) and isinstance(payload, dict):
            self.context.connection_params = payload
            try:
                await self.view.on_ws_connect(self.context)
            except ConnectionRejectionError as exc:
                await self.send_message({"type": "connection_error", "payload": exc.payload})
                await self.websocket.close(WS_CLOSE_FORBIDDEN, WS_CLOSE_FORBIDDEN_REASON)
                return
        await super().handle_connection_init(message)
        _acknowledged(self.websocket, self.connection_acknowledged)
