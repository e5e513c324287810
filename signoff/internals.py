"""Every private part of a dependency that Signoff relies on, in one place.

Strawberry, graphql-core and uvicorn offer no public way to do a few things the executor
and the live runtime need. Each such use goes through a name here, checked against the
installed versions by ``tests/unit/test_internals.py``, so an upgrade that changes one
fails there, naming it, rather than somewhere in a live stream.
"""

from __future__ import annotations

import asyncio
import dis
import inspect
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

import strawberry
from graphql import (
    ExecutionResult,
    GraphQLField,
    GraphQLResolveInfo,
    GraphQLResolveInfoHelpers,
    GraphQLSchema,
    execute_subscription_event,
)
from graphql.execution import Executor
from graphql.execution.collect_fields import (
    CollectedFields,
    FieldDetailsList,
    FragmentDetails,
    GroupedFieldSet,
    collect_subfields,
)
from graphql.pyutils import AwaitableOrValue, gather_with_cancel
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.extensions.context import (
    ExecutingContextManager,
    ExtensionContextManagerBase,
    OperationContextManager,
    ParsingContextManager,
    ValidationContextManager,
    WrappedHook,
)
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.scalars import JSON
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.schema.types.scalar import DEFAULT_SCALAR_REGISTRY
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler
from strawberry.types.field import StrawberryField
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.http11 import Request
from websockets.protocol import State

from signoff.live.turnstile import Turnstile
from signoff.live.waits import Flag, MessageQueue

__all__ = [
    "ASGIWebSocketAdapter",
    "BaseGraphQLTransportWSHandler",
    "BaseGraphQLWSHandler",
    "CollectedFields",
    "ExecutingContextManager",
    "ExtensionContextManagerBase",
    "FieldDetailsList",
    "FragmentDetails",
    "GroupedFieldSet",
    "MessageAtATimeProtocol",
    "OperationContextManager",
    "ParsingContextManager",
    "SchemaExtensionsRunner",
    "StrawberryExecutionContext",
    "UpgradeFreedHttpProtocol",
    "ValidationContextManager",
    "WrappedHook",
    "collect_subfields",
    "core_schema",
    "detached_async_helpers",
    "execute_for_event",
    "field_definition",
    "has_default_resolver",
    "http_protocol_taking_turns",
    "ignores_info",
    "json_serialize",
    "make_info",
    "raw_info",
    "uvicorn_forget_handshake",
    "uvicorn_lean_waits",
    "uvicorn_protocol",
    "uvicorn_takes_frame_now",
]

# graphql-core's executor as Strawberry subclasses it (``execute_fields`` and
# ``collect_subfields`` are overridden by ``schema.execution``).
StrawberryExecutionContext = StrawberryGraphQLCoreExecutionContext

# Strawberry's runner of schema extensions' hooks is replaced per operation through
# ``Schema.create_extensions_runner`` by ``schema.serving.hooks``: it overrides the
# runner's ``operation``, ``parsing``, ``validation`` and ``executing``, reads each phase
# manager's ``HOOK_NAME``, builds a manager without its ``__init__`` by setting ``hooks``
# (a list of ``WrappedHook(extension, hook, is_async)``), and relies on those managers'
# exit stack entering the hooks in order.

# Strawberry's websocket adapter and protocol handlers are subclassed by
# ``live.websocket``: it reads ``ws`` of the adapter and ``operations``, ``tasks`` and
# ``connection_acknowledged`` of the handlers, and overrides the methods the contract
# tests name. It also steps the adapter's ``ws.send_text`` once by hand, relying on
# uvicorn's send completing in one step unless it waits for the socket to drain
# (``tests/events/test_stalled_subscriber.py`` holds it to that). ``live.sse`` steps an
# HTTP answer's ASGI send the same way (``tests/events/test_event_streams.py``).
#
# ``TransportWSHandler.run_operation`` takes a subscription over from Strawberry's
# operation by a ``BaseException`` (``schema.live.Detached``) raised in its source stream:
# it relies on ``schema.stream``, graphql-core's mapping of the stream and the handler's
# ``run_operation`` letting any ``BaseException`` through (they catch ``Exception``), on
# the operation hooks of extensions seeing it thrown in, and then ends the subscription
# with the handler's ``Operation.send_next`` and ``send_operation_message``.


def core_schema(schema: strawberry.Schema) -> GraphQLSchema:
    """graphql-core's schema behind Strawberry's."""
    return schema._schema


def raw_info(info: strawberry.Info[Any, Any]) -> GraphQLResolveInfo[Any]:
    """graphql-core's resolve info behind Strawberry's ``Info``."""
    return info._raw_info


def make_info(
    info_class: type[strawberry.Info[Any, Any]],
    raw: GraphQLResolveInfo[Any],
    field: StrawberryField,
) -> strawberry.Info[Any, Any]:
    """Strawberry's ``Info`` for ``raw``, as Strawberry builds it for a resolver."""
    return info_class(_raw_info=raw, _field=field)


def field_definition(field: GraphQLField) -> StrawberryField | None:
    """The Strawberry field a graphql-core field was converted from."""
    definition = field.extensions.get(GraphQLCoreConverter.DEFINITION_BACKREF)
    return definition if isinstance(definition, StrawberryField) else None


def has_default_resolver(field: GraphQLField) -> bool:
    """Whether Strawberry resolves ``field`` with its basic resolver (no resolver,
    permission or extension): it returns ``getattr(source, python_name)``."""
    return bool(getattr(field.resolve, "_is_default", False))


def ignores_info(is_type_of: Callable[[Any, Any], Any]) -> bool:
    """Whether an object type's ``is_type_of`` never reads its second argument, the resolve
    info (Strawberry's, ``(obj, _info)``, does not): then a value can be checked without
    building an info, which is made only for a relation whose value needs graphql-core's
    completion (``schema.serving.relations``). Read off the function's bytecode."""
    code = getattr(is_type_of, "__code__", None)
    if (
        code is None
        or code.co_argcount != 2
        or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    ):
        return False
    name = code.co_varnames[1]
    if name in code.co_cellvars:  # an inner function reads it
        return False
    uses = [i for i in dis.get_instructions(code) if i.argval == name]
    return not uses and "locals" not in code.co_names


# Strawberry's output coercion of its JSON scalar, which answers every value unchanged
# (``schema.serving.execution`` passes such values through without calling it).
def _json_serialize() -> Callable[[Any], Any]:
    serialize = DEFAULT_SCALAR_REGISTRY[JSON].serialize
    assert serialize is not None, "Strawberry's JSON scalar has no serialize"
    return serialize


json_serialize = _json_serialize()


def execute_for_event(
    executor: Executor[Any], event: Any, context: Any
) -> AwaitableOrValue[ExecutionResult]:
    """Execute a subscription's selection for one event, with a shallow copy of
    ``executor`` (built once for the subscription) whose root value is ``event``."""
    per_event = executor.build_per_event_executor(event)
    per_event.context_value = context
    return execute_subscription_event(per_event)


def detached_async_helpers(executor: Executor[Any]) -> GraphQLResolveInfoHelpers:
    """What graphql-core gives resolvers as ``info.async_helpers``: its executor's
    ``gather_async_work`` and ``track_async_work``, through a weak reference.

    As graphql-core's bound methods they make every executor a reference cycle, and what
    it holds (the context, its loaders, their rows) waits for the cyclic garbage collector
    instead of going with the request. Resolvers run while their execution does."""
    # Once the executor is gone there is no execution left for work to join.
    executor_of = weakref.ref(executor)

    def gather(values: Sequence[Awaitable[Any]]) -> Awaitable[list[Any]]:
        alive = executor_of()
        if alive is None:
            return gather_with_cancel(*values)
        return alive.gather_async_work(values)

    def track(values: Sequence[Any]) -> None:
        alive = executor_of()
        if alive is not None:
            alive.track_async_work(values)

    return GraphQLResolveInfoHelpers(gather=gather, track=track)


def uvicorn_protocol(send: Any) -> WebSocketsSansIOProtocol | None:
    """The uvicorn connection behind a websocket's server ``send``, where it is uvicorn's
    sans-I/O websockets protocol (``None`` for any other server or implementation)."""
    protocol = getattr(send, "__self__", None)
    if type(protocol) not in (WebSocketsSansIOProtocol, MessageAtATimeProtocol):
        return None
    if getattr(send, "__func__", None) is not WebSocketsSansIOProtocol.send:
        return None
    return protocol


def uvicorn_takes_frame_now(protocol: WebSocketsSansIOProtocol) -> bool:
    """Whether a frame may be written to the transport now: the connection is open, its
    handshake done, no close sent, no extension negotiated, the transport not paused."""
    return not (
        protocol.disconnected
        or protocol.close_sent
        or not protocol.handshake_complete
        or protocol.initial_response is not None
        or protocol.conn.state is not State.OPEN
        or protocol.conn.extensions
        or not protocol.writable.is_set()
        or protocol.transport.is_closing()
    )


# Kept by uvicorn's protocol for the connection's life, read only until the handshake
# completes (``handle_connect`` and the accept in ``send``).
_HANDSHAKE_ATTRIBUTES = ("request", "response")


def uvicorn_forget_handshake(protocol: WebSocketsSansIOProtocol) -> None:
    """Once the handshake is complete, drop the request and response that uvicorn keeps
    for the connection's life (their headers are read only until then), and empty the
    request's headers: websockets' parser keeps the request itself (a local of its
    generator) and reads nothing of it after handing it over. The ASGI scope keeps its own
    copy of the request headers."""
    if not protocol.handshake_complete:
        return
    request = protocol.__dict__.get("request")
    if isinstance(request, Request):
        request.headers.clear()
    for name in _HANDSHAKE_ATTRIBUTES:
        protocol.__dict__.pop(name, None)


def uvicorn_lean_waits(protocol: WebSocketsSansIOProtocol) -> None:
    """Give the connection ``live.waits``' lean queue of ASGI messages and flag of the
    transport's pauses for uvicorn's ``asyncio.Queue`` and ``asyncio.Event`` (uvicorn
    calls only ``put_nowait``, ``get``, ``empty``; ``wait``, ``set``, ``clear``)."""
    # Called by the task serving the connection between its accept and its first
    # receive: nothing waits on either then. A queued message moves over; a paused
    # transport's event, which a send could be waiting on, is left as it is.
    queue = protocol.queue
    if type(queue) is asyncio.Queue:
        lean: MessageQueue[Any] = MessageQueue()
        while not queue.empty():
            lean.put_nowait(queue.get_nowait())
        protocol.queue = lean  # type: ignore[assignment]
    writable = protocol.writable
    if type(writable) is asyncio.Event and writable.is_set():
        protocol.writable = Flag(True)  # type: ignore[assignment]


def _frame_end(data: bytes | bytearray) -> int:
    """Where the websocket frame at the start of ``data`` ends, within ``data`` or past it
    (RFC 6455 section 5.2: two bytes, a 16- or 64-bit length where the 7-bit one says so, a
    client's 4-byte mask, the payload); 0 while its header is not all there."""
    if len(data) < 2:
        return 0
    length = data[1] & 0x7F
    start = 2
    if length >= 126:
        start += 2 if length == 126 else 8
        if len(data) < start:
            return 0
        length = int.from_bytes(data[2:start], "big")
    if data[1] & 0x80:
        start += 4
    return start + length if len(data) >= start else 0


class MessageAtATimeProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O websocket protocol, parsing an open connection's frames as its app
    reads their messages: one message waits parsed at a time, what came after it waits
    unparsed (reading paused, as uvicorn pauses it while a message waits). A client's burst
    of messages (a storm's hundred subscriptions on each socket) was parsed as it came, in
    one turn of the loop, however long each waited for its own turn to be served."""

    # Both are set on a connection only while they are not ``None`` or 0: an attribute
    # added to each of thousands of idle connections would cost each its memory.
    # What came after the message that waits for the app, unparsed; ``None``: nothing.
    _unparsed: bytearray | None = None
    # What is still to come of a frame whose start the parser has: a frame is parsed as
    # its bytes come (its header first, so that one over the size limit is refused then).
    _owed = 0

    def data_received(self, data: bytes) -> None:
        if self._unparsed is not None:
            self._unparsed += data
        elif self.conn.state is not State.OPEN or (  # the handshake's request, or closing
            self.queue.empty() and not self._owed and _frame_end(data) == len(data)
        ):  # nothing waits and one whole frame came: parsed as uvicorn parses it
            super().data_received(data)
            return
        else:
            self._unparsed = bytearray(data)
        self._parse_next()

    def _parse_next(self) -> None:
        """Parse frame by frame until a message waits for the app or nothing is left.
        Control frames are answered as they come; once the connection is no longer open
        (closing, or a frame the parser refused), the rest goes to uvicorn as it came, and
        once the app has closed it (uvicorn then drops messages), all of it: the client's
        close answers the app's."""
        unparsed = self._unparsed
        while unparsed and (self.queue.empty() or self.close_sent):
            if self.conn.state is not State.OPEN:
                end = len(unparsed)
            elif self._owed:
                end = self._owed
            elif not (end := _frame_end(unparsed)):
                break  # a header not all there: held, reading on
            taken = min(end, len(unparsed))
            frame = bytes(unparsed[:taken])
            del unparsed[:taken]
            self._owe(end - taken)
            super().data_received(frame)
        if unparsed is not None and not unparsed:
            del self._unparsed

    def _owe(self, owed: int) -> None:
        if owed:
            self._owed = owed
        elif self._owed:
            del self._owed

    async def receive(self) -> Any:
        """uvicorn's, parsing the next message before reading resumes."""
        message = await self.queue.get()
        if self.queue.empty():
            self._parse_next()
        if self.read_paused and self.queue.empty():
            self.read_paused = False
            self.transport.resume_reading()
        return message


class UpgradeFreedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, letting go of its parser once it has handed the
    connection over to a websocket. The parser refers back to the protocol, which uvicorn
    breaks in ``connection_lost``; but an upgraded connection's HTTP protocol never sees
    that (the transport goes to the websocket protocol), so each websocket left the pair,
    with what they hold (about 40 objects), for the cyclic collector."""

    # A new connection's first read waits for its turn of this turnstile (``live.turnstile``):
    # a storm's hundreds of upgrade requests were parsed, and their websocket protocols and
    # tasks made, as they arrived, a hundred in one turn of the loop. ``None``: no wait.
    turnstile: ClassVar[Turnstile | None] = None
    # What came before the connection's turn, held unparsed; ``None`` once it is read.
    _before_turn: bytearray | None = None
    # Whether the connection has had its first bytes (its turn is taken then).
    _read_before = False

    def data_received(self, data: bytes) -> None:
        held = self._before_turn
        if held is not None:
            held += data
            self.transport.pause_reading()
            return
        if not self._read_before and self.turnstile is not None:
            # The turn is taken when the first bytes come, not when the connection is
            # made: a storm's clients connect well before they send, so turns taken then
            # had passed, and their requests were parsed as they came.
            self._read_before = True
            waiter = self.turnstile.wait()
            if waiter is not None:
                # What comes meanwhile waits in the socket's buffer.
                self._before_turn = bytearray(data)
                self.transport.pause_reading()
                waiter.add_done_callback(self._take_turn)
                return
        super().data_received(data)

    def _take_turn(self, _: asyncio.Future[None]) -> None:
        held, self._before_turn = self._before_turn, None
        if self.transport.is_closing():
            return
        # Reading resumes first: a pause the parser asks for while it reads what was held
        # (uvicorn's flow control) is then the last word.
        self.transport.resume_reading()
        if held:
            super().data_received(bytes(held))

    def handle_websocket_upgrade(self) -> None:
        super().handle_websocket_upgrade()
        self.parser = None  # type: ignore[assignment]  # as uvicorn's connection_lost does


def http_protocol_taking_turns(turnstile: Turnstile) -> type[UpgradeFreedHttpProtocol]:
    """``UpgradeFreedHttpProtocol`` whose new connections read first at their turn of
    ``turnstile`` (uvicorn's ``http`` setting takes a class)."""
    return type("TurnTakingHttpProtocol", (UpgradeFreedHttpProtocol,), {"turnstile": turnstile})
