"""Subscriptions over Server-Sent Events: the graphql-sse protocol at ``/graphql``, both
modes (distinct connections: one operation per streamed answer; single connection: a
reserved stream that operations join by its token), authenticated as any request.

A stream is a ``LiveSocket`` like a websocket: the same broadcast groups, ``Last-Event-ID``
as ``after``, and the same bound of connections (``live.quota``). Frames leave in order; a
stream ``frame_limit`` frames or ``byte_limit`` bytes behind is cut, an idle one gets a
heartbeat (docs/design.md section 8.7).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import secrets
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import strawberry
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Send
from strawberry.http import process_result
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from signoff.errors import (
    BadRequestBody,
    EventStreamConflict,
    NotFound,
    SignoffError,
    TooManySubscriptions,
    Unauthenticated,
)
from signoff.live.backlog import Backlog
from signoff.live.broadcast import Broadcaster, Watch
from signoff.live.prepared_frames import Payload
from signoff.live.quota import LiveQuota
from signoff.live.reclaim import MemoryReclaim
from signoff.live.websocket import CLOSE_TIMEOUT_SECONDS
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.feed.subscriptions import FeedScope
from signoff.schema.context import Context
from signoff.schema.live import LiveSocket, ScopeOf
from signoff.schema.subscription import LiveEventsUnavailable

logger = logging.getLogger("signoff.sse")

EVENT_STREAM = "text/event-stream"
TOKEN_HEADER = "x-graphql-event-stream-token"
TOKEN_QUERY = "token"
# A reserved stream that is not opened within this long is forgotten.
RESERVATION_SECONDS = 30.0
HEARTBEAT = b": ping\n\n"
STREAM_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    # No cache may keep it, no proxy transform or buffer it (nginx reads the last one).
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]
OPERATION_TYPES = {
    "GET": (OperationType.QUERY, OperationType.SUBSCRIPTION),
    "POST": (OperationType.QUERY, OperationType.MUTATION, OperationType.SUBSCRIPTION),
}


class StreamRequest(Enum):
    """What a request of the graphql-sse protocol asks for."""

    DISTINCT = "distinct"  # one operation, streamed in the answer
    RESERVE = "reserve"  # PUT: a stream's token
    OPEN = "open"  # GET with the token: the stream
    OPERATE = "operate"  # POST with the token: an operation on the stream
    STOP = "stop"  # DELETE with the token: stop an operation


def stream_request(request: Request) -> StreamRequest | None:
    """The graphql-sse request ``request`` is, if it is one (else plain GraphQL over HTTP)."""
    method = request.method
    if method == "PUT":
        return StreamRequest.RESERVE
    if method == "DELETE":
        return StreamRequest.STOP
    if stream_token(request) is not None:
        return StreamRequest.OPEN if method == "GET" else StreamRequest.OPERATE
    accept = request.headers.get("accept", "")
    if method in OPERATION_TYPES and EVENT_STREAM in accept.lower():
        return StreamRequest.DISTINCT
    return None


def stream_token(request: Request) -> str | None:
    return request.headers.get(TOKEN_HEADER) or request.query_params.get(TOKEN_QUERY)


def _send_now(sending: Coroutine[Any, Any, None]) -> bool:
    """Step an ASGI send once, as ``websocket.Connection`` does: ``True`` if it completed,
    ``False`` (nothing written) if it would wait for a client that is not reading. Servers
    wait for the transport to drain before writing anything, so closing the send there
    writes nothing. A failure (the client went away) is raised."""
    try:
        sending.send(None)
    except StopIteration:
        return True
    sending.close()
    return False


class EventStream:
    """One ``text/event-stream`` answer and the operations it carries."""

    def __init__(self, *, frame_limit: int, byte_limit: int, single: bool, token: str) -> None:
        self.single = single  # single connection mode: events name their operation
        self.token = token  # the API token (or session) it was reserved with
        self.closed = False
        self.operations: dict[str, asyncio.Task[None]] = {}
        self.ended = asyncio.Event()  # the answer is complete, or given up
        self.written = False  # since the last heartbeat
        self._send: Send | None = None
        self._items: list[tuple[str | None, bytes]] = []  # what waits for the writer
        self._backlog = Backlog(frame_limit, byte_limit)  # live frames in ``_items``
        self._sending = False
        self._ending = False
        self._writer: asyncio.Task[None] | None = None
        self._openings: dict[str, str] = {}  # operation id -> its events' opening

    @property
    def attached(self) -> bool:
        return self._send is not None

    async def attach(self, send: Send) -> None:
        """Start the answer on ``send``; what was queued before follows."""
        await send({"type": "http.response.start", "status": 200, "headers": STREAM_HEADERS})
        self._send = send
        if self._items or self._ending:
            self._wake_writer()

    def activate(self, operation_id: str) -> None:
        encoded = json.dumps(operation_id)
        self._openings[operation_id] = f'event: next\ndata: {{"id":{encoded},"payload":'

    def deactivate(self, operation_id: str) -> None:
        self._openings.pop(operation_id, None)

    def send_frame(self, operation_id: str, payload: Payload) -> bool:
        """A live frame: sent at once or queued; ``False`` once the stream is cut off."""
        opening = self._openings.get(operation_id)
        if opening is None or self.closed or self._ending:
            return False
        if not self.single:
            return self._enqueue(operation_id, payload.event())
        return self._enqueue(operation_id, f"{opening}{payload.text}}}\n\n".encode())

    def send_result(self, operation_id: str, result: dict[str, Any]) -> None:
        """A result outside the broadcast (an error, a query's answer)."""
        data = result if not self.single else {"id": operation_id, "payload": result}
        self.send_event("next", data)

    def send_complete(self, operation_id: str) -> None:
        self.send_event("complete", {"id": operation_id} if self.single else None)

    def send_event(self, event: str, data: object) -> None:
        encoded = "" if data is None else json.dumps(data, separators=(",", ":"))
        if not self.closed and not self._ending:
            self._enqueue(None, f"event: {event}\ndata: {encoded}\n\n".encode())

    def heartbeat(self) -> None:
        """A comment, unless something was written since the last heartbeat."""
        if not self.written and self.attached and not self.closed and not self._ending:
            self._enqueue(None, HEARTBEAT)
        self.written = False

    def end(self) -> None:
        """Complete the answer after what was queued before; a client that does not read
        is cut off after ``CLOSE_TIMEOUT_SECONDS``."""
        if not self.closed and not self._ending:
            self._ending = True
            if self.attached:
                self._wake_writer()
            asyncio.get_running_loop().call_later(CLOSE_TIMEOUT_SECONDS, self._cut_if_ending)

    def _cut_if_ending(self) -> None:
        if not self.ended.is_set():
            self.stop()

    def stop(self) -> None:
        """The client went away (or the answer ended): drop what is left."""
        self.closed = True
        self._items.clear()
        self._backlog.clear()
        self.ended.set()
        for task in list(self.operations.values()):
            task.cancel()
        if self._writer is not None and self._writer is not asyncio.current_task():
            self._writer.cancel()

    async def wait_for_room(self) -> None:
        """Until at most half of either bound waits (paces a replay)."""
        await self._backlog.wait_for_room(lambda: self.closed)

    def _enqueue(self, operation_id: str | None, chunk: bytes) -> bool:
        self.written = True
        if self.attached and not self._items and not self._sending and self._write_now(chunk):
            return True
        if self.closed:
            return False
        if operation_id is not None:
            if not self._backlog.admits(len(chunk)):
                logger.info("cutting off an event stream that fell behind")
                self.stop()
                return False
            self._backlog.add(len(chunk))
        self._items.append((operation_id, chunk))
        if self.attached:
            self._wake_writer()
        return True

    def _write_now(self, chunk: bytes) -> bool:
        assert self._send is not None
        try:
            return _send_now(self._body(chunk, more=True))
        except Exception as exc:  # the client went away
            logger.debug("event stream send failed: %s", type(exc).__name__)
            self.stop()
            return False

    def _body(self, chunk: bytes, *, more: bool) -> Coroutine[Any, Any, None]:
        assert self._send is not None
        sending = self._send({"type": "http.response.body", "body": chunk, "more_body": more})
        assert isinstance(sending, Coroutine)
        return sending

    def _wake_writer(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write(), name="signoff-sse-writer")

    async def _write(self) -> None:
        """Drain the queue, waiting for the client as long as it takes; then end, if asked."""
        try:
            while self._items and not self.closed:
                operation_id, chunk = self._items.pop(0)
                if operation_id is not None:
                    self._backlog.remove(len(chunk))
                self._sending = True
                try:
                    await self._body(chunk, more=True)
                finally:
                    self._sending = False
            if self._ending and not self.closed:
                await self._body(b"", more=False)
                self.ended.set()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the client went away
            logger.debug("event stream send failed: %s", type(exc).__name__)
            self.stop()


class StreamOperation:
    """One operation of an event stream, as the subscription fields see it (``LiveSocket``)."""

    def __init__(
        self,
        stream: EventStream,
        operation_id: str,
        broadcaster: Broadcaster | None,
        last_event_id: str | None,
    ) -> None:
        self.stream = stream
        self.operation_id = operation_id
        self.revoked = False
        self._broadcaster = broadcaster
        self._last_event_id = last_event_id

    async def follow(self, info: strawberry.Info, scope: ScopeOf, after: str | None) -> None:
        """Serve the subscription on the stream; ``Last-Event-ID`` (what the client saw
        last on a stream that was cut) goes before ``after``."""
        if self._broadcaster is None:
            raise LiveEventsUnavailable()
        stream, operation_id = self.stream, self.operation_id
        stream.activate(operation_id)
        try:
            await self._broadcaster.follow(
                info,
                scope,
                self._last_event_id or after,
                functools.partial(self._watch, operation_id),
            )
        except Unauthenticated:
            self.revoked = True  # the stream ends after this operation's error
            raise
        finally:
            stream.deactivate(operation_id)

    def _watch(
        self, operation_id: str, viewer: Viewer, token: str, scope: FeedScope, start: int | None
    ) -> Watch:
        stream = self.stream
        return Watch(
            viewer=viewer,
            token=token,
            scope=scope,
            start=start,
            send=functools.partial(stream.send_frame, operation_id),
            wait_for_room=stream.wait_for_room,
            is_closed=lambda: stream.closed,
        )

    async def close(self, code: int, reason: str) -> None:
        """The stream ends (a websocket's close code has no meaning here)."""
        self.stream.end()

    def end_at(self, expires_at: float) -> None:
        """End the stream at ``expires_at`` (epoch seconds): the token it was opened with
        (an identity provider's access token) ends then, and no frame may leave after it."""
        delay = max(0.0, expires_at - time.time())
        # Ending a stream already ended does nothing, so the timer need not be cancelled.
        asyncio.get_running_loop().call_later(delay, self.stream.end)


# Who a request is: its API token (or console session) and viewer; refusals are raised.
Authenticate = Callable[[Request], Awaitable[tuple[str, Viewer]]]
# The context of one operation on a stream.
MakeContext = Callable[[Request, str, Viewer, LiveSocket], Context]


@dataclass
class _Reservation:
    stream: EventStream
    made: float = field(default_factory=time.monotonic)


class EventStreams:
    """The graphql-sse protocol for a view: its reservations, open streams and heartbeats."""

    def __init__(
        self,
        schema: strawberry.Schema,
        broadcaster: Broadcaster | None,
        *,
        authenticate: Authenticate,
        make_context: MakeContext,
        frame_limit: int,
        byte_limit: int,
        heartbeat_seconds: float,
        max_operations: int,
        quota: LiveQuota | None = None,
        reclaim: MemoryReclaim | None = None,
    ) -> None:
        self.schema = schema
        self.quota = quota  # connections per token and actor, websockets' and streams' together
        # Counts the streams with the websockets: what a storm of either took is given back.
        self.reclaim = reclaim
        self.max_operations = max_operations  # per stream, as per websocket
        self.broadcaster = broadcaster
        self.authenticate = authenticate
        self.make_context = make_context
        self.frame_limit = frame_limit
        self.byte_limit = byte_limit
        self.heartbeat_seconds = heartbeat_seconds
        self.open_streams: weakref.WeakSet[EventStream] = weakref.WeakSet()
        self._reservations: dict[str, _Reservation] = {}
        self._beating: asyncio.Task[None] | None = None

    async def handle(
        self, kind: StreamRequest, request: Request, receive: Receive, send: Send
    ) -> Response | None:
        """Serve one graphql-sse request: an answer to send, or ``None`` where the answer
        was streamed here. Refusals before any answer began are raised."""
        token, viewer = await self.authenticate(request)
        if kind is StreamRequest.DISTINCT:
            body = await _operation_body(request)
            stream = EventStream(
                frame_limit=self.frame_limit, byte_limit=self.byte_limit, single=False, token=token
            )
            await self._stream(
                stream,
                viewer,
                receive,
                send,
                lambda: self._operate(stream, "", body, request, viewer),
            )
            return None
        if kind is StreamRequest.RESERVE:
            return self._reserve(token)
        stream = self._reserved(request, token)
        if kind is StreamRequest.OPEN:
            if stream.attached or stream.closed:
                raise EventStreamConflict("This event stream is already open; reserve another.")
            await self._stream(stream, viewer, receive, send, None)
            return None
        if kind is StreamRequest.STOP:
            task = stream.operations.get(request.query_params.get("operationId", ""))
            if task is not None:
                task.cancel()
            return Response(status_code=200)
        body = await _operation_body(request)
        extensions = body.get("extensions")
        operation_id = extensions.get("operationId") if isinstance(extensions, dict) else None
        if not isinstance(operation_id, str) or not operation_id:
            raise BadRequestBody("An operation on an event stream needs extensions.operationId.")
        if operation_id in stream.operations:
            raise EventStreamConflict(f"Operation {operation_id} already runs on this stream.")
        if len(stream.operations) >= self.max_operations:
            raise TooManySubscriptions(
                f"This event stream already runs {self.max_operations} operations, the limit; "
                "stop one or reserve another stream."
            )
        operate = self._operate(stream, operation_id, body, request, viewer)
        task = asyncio.create_task(operate, name="signoff-sse-operation")
        stream.operations[operation_id] = task
        task.add_done_callback(lambda _: stream.operations.pop(operation_id, None))
        return Response(status_code=202)

    async def close_all(self) -> None:
        """End every stream (the server is shutting down): clients resume elsewhere."""
        for stream in list(self.open_streams):
            stream.end()
        for reservation in self._reservations.values():
            reservation.stream.stop()
        self._reservations.clear()

    def _reserve(self, token: str) -> Response:
        now = time.monotonic()
        for key, reservation in list(self._reservations.items()):
            unopened = not reservation.stream.attached
            if reservation.stream.closed or (
                unopened and now - reservation.made > RESERVATION_SECONDS
            ):
                del self._reservations[key]
                reservation.stream.stop()
        key = secrets.token_urlsafe(24)
        stream = EventStream(
            frame_limit=self.frame_limit, byte_limit=self.byte_limit, single=True, token=token
        )
        self._reservations[key] = _Reservation(stream)
        return PlainTextResponse(key, status_code=201)

    def _reserved(self, request: Request, token: str) -> EventStream:
        key = stream_token(request) or ""
        reservation = self._reservations.get(key)
        if (
            reservation is None
            or reservation.stream.closed
            or not secrets.compare_digest(reservation.stream.token, token)
        ):
            raise NotFound("No event stream has this token for you; reserve one with PUT.")
        return reservation.stream

    async def _stream(
        self,
        stream: EventStream,
        viewer: Viewer,
        receive: Receive,
        send: Send,
        operate: Callable[[], Coroutine[Any, Any, None]] | None,
    ) -> None:
        """Answer with ``stream`` until it ends or the client goes; ``operate``: its one
        operation (distinct connections), run here. Over the token's (or actor's) bound
        of connections, ``TooManyConnections`` is raised before the answer begins."""
        slot = None if self.quota is None else self.quota.open_stream(stream.token, viewer.id)
        try:
            await self._answer(stream, receive, send, operate)
        finally:
            if slot is not None:
                slot.release()

    async def _answer(
        self,
        stream: EventStream,
        receive: Receive,
        send: Send,
        operate: Callable[[], Coroutine[Any, Any, None]] | None,
    ) -> None:
        await stream.attach(send)
        self.open_streams.add(stream)
        self._start_heartbeats()
        listener = asyncio.create_task(_until_disconnected(receive, stream))
        if operate is not None:  # a task of its own, which the client's going cancels
            stream.operations[""] = asyncio.create_task(operate(), name="signoff-sse-operation")
        if self.reclaim is not None:
            self.reclaim.opened()
        try:
            await stream.ended.wait()
        finally:
            listener.cancel()
            stream.stop()
            self.open_streams.discard(stream)
            if self.reclaim is not None:
                self.reclaim.closed()
            for key, reservation in list(self._reservations.items()):
                if reservation.stream is stream:
                    del self._reservations[key]

    async def _operate(
        self,
        stream: EventStream,
        operation_id: str,
        body: dict[str, Any],
        request: Request,
        viewer: Viewer,
    ) -> None:
        """Run one operation on ``stream``: its results as ``next`` events, then ``complete``.
        A subscription's frames come from its broadcast group (``StreamOperation``)."""
        live = StreamOperation(
            stream, operation_id, self.broadcaster, request.headers.get("last-event-id")
        )
        context = self.make_context(request, stream.token, viewer, live)
        if viewer.expires_at is not None:
            live.end_at(viewer.expires_at)
        try:
            results = await self.schema.stream(
                body.get("query"),
                variable_values=body.get("variables"),
                context_value=context,
                operation_name=body.get("operationName"),
                allowed_operation_types=OPERATION_TYPES.get(request.method, ()),
            )
            async for result in results:
                if isinstance(result, ExecutionResult):  # never incremental: no @defer here
                    stream.send_result(operation_id, dict(process_result(result)))
        except SignoffError as refusal:
            error = {"message": refusal.message, "extensions": refusal.extensions}
            stream.send_result(operation_id, {"errors": [error]})
        except Exception as exc:  # Strawberry's refusals of the document (no operation...)
            error = {"message": str(exc), "extensions": {"code": BadRequestBody.code}}
            stream.send_result(operation_id, {"errors": [error]})
        finally:
            await context.close()
        stream.send_complete(operation_id)
        if not stream.single or live.revoked:
            stream.end()

    def _start_heartbeats(self) -> None:
        if self.heartbeat_seconds > 0 and (self._beating is None or self._beating.done()):
            self._beating = asyncio.create_task(self._beat(), name="signoff-sse-heartbeats")

    async def _beat(self) -> None:
        """One timer for every open stream: a comment into each that was idle."""
        while self.open_streams:
            await asyncio.sleep(self.heartbeat_seconds)
            for stream in list(self.open_streams):
                stream.heartbeat()


async def _until_disconnected(receive: Receive, stream: EventStream) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    stream.stop()


async def _operation_body(request: Request) -> dict[str, Any]:
    """The GraphQL request: the JSON body of a POST, the query parameters of a GET."""
    if request.method == "GET":
        params: dict[str, Any] = dict(request.query_params)
        for key in ("variables", "extensions"):
            if isinstance(params.get(key), str):
                params[key] = _json(params[key])
        return params
    body = _json(await request.body())
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        raise BadRequestBody('Send {"query": "..."} (and optionally variables and operationName).')
    return body


def _json(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise BadRequestBody("The request body is not valid JSON.") from None
