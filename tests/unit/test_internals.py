"""Contract tests of the private parts of Strawberry, graphql-core and uvicorn that
``signoff.internals`` gathers: each fails with a message naming what an upgrade changed."""

from __future__ import annotations

import asyncio
import inspect
import re
import weakref
from collections.abc import AsyncGenerator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import strawberry
import uvicorn
from graphql import GraphQLResolveInfoHelpers, GraphQLSchema, parse
from graphql.execution import Executor
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import Operation
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState
from websockets.datastructures import Headers
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import State
from websockets.server import ServerProtocol

from signoff import internals
from signoff.events.hub import Change
from signoff.live.turnstile import Turnstile
from signoff.live.waits import Flag, MessageQueue
from signoff.schema import build_schema
from signoff.schema.change_event import ChangeEvent
from signoff.schema.serving.execution import PlainFieldExecutor
from tests.live import ON_EITHER_LOOP, run_on


@pytest.fixture(scope="module")
def schema() -> strawberry.Schema:
    return build_schema()


def _parameters(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_strawberry_keeps_graphql_cores_schema_behind_its_own(schema: strawberry.Schema) -> None:
    assert isinstance(internals.core_schema(schema), GraphQLSchema), (
        "strawberry.Schema._schema is no longer graphql-core's schema"
    )


def test_a_converted_field_points_back_at_its_strawberry_field(schema: strawberry.Schema) -> None:
    change_event = internals.core_schema(schema).type_map["ChangeEvent"]
    kind = change_event.fields["kind"]  # type: ignore[attr-defined]
    definition = internals.field_definition(kind)
    assert definition is not None, (
        "GraphQLCoreConverter.DEFINITION_BACKREF no longer leads from a graphql-core field "
        "to its StrawberryField"
    )
    assert definition.python_name == "kind"
    assert internals.has_default_resolver(kind), (
        "Strawberry's basic resolver is no longer marked `_is_default`: plain fields would "
        "lose their short path"
    )
    task = change_event.fields["task"]  # type: ignore[attr-defined]
    assert not internals.has_default_resolver(task)


def test_info_wraps_graphql_cores_resolve_info(schema: strawberry.Schema) -> None:
    fields = {field.name for field in strawberry.Info.__dataclass_fields__.values()}
    assert {"_raw_info", "_field"} <= fields, (
        f"strawberry.Info no longer has the fields _raw_info and _field (has {sorted(fields)})"
    )
    raw: Any = object()
    definition = internals.field_definition(
        internals.core_schema(schema).type_map["ChangeEvent"].fields["kind"]  # type: ignore[attr-defined]
    )
    assert definition is not None
    info = internals.make_info(strawberry.Info, raw, definition)
    assert internals.raw_info(info) is raw


def test_a_subscription_executes_for_one_event_with_a_per_event_executor(
    schema: strawberry.Schema,
) -> None:
    assert hasattr(Executor, "build_per_event_executor"), (
        "graphql-core's Executor.build_per_event_executor is gone: frames cannot be "
        "executed once per event"
    )
    document = parse("subscription { queueEvents { kind entityId } }")
    executor = schema.execution_context_class.build(internals.core_schema(schema), document)
    assert isinstance(executor, PlainFieldExecutor)
    change = Change(
        cursor=1,
        kind="task.created",
        entity_type="task",
        entity_id="t-1",
        queue_id="q-1",
        proposal_id=None,
        actor_id=None,
        occurred_at=datetime.now(UTC),
    )
    result: Any = internals.execute_for_event(executor, ChangeEvent.from_change(change), None)
    assert not inspect.isawaitable(result)
    assert result.errors is None
    assert result.data == {"queueEvents": {"kind": "task.created", "entityId": "t-1"}}


async def test_resolvers_async_helpers_reach_the_executor_without_a_cycle(
    schema: strawberry.Schema,
) -> None:
    for name in ("gather_async_work", "track_async_work"):
        assert callable(getattr(Executor, name, None)), f"graphql-core's Executor.{name} is gone"
    document = parse("{ viewer { queueIds } }")
    executor = schema.execution_context_class.build(internals.core_schema(schema), document)
    assert isinstance(executor, PlainFieldExecutor)
    helpers = executor.async_helpers
    assert isinstance(helpers, GraphQLResolveInfoHelpers), (
        "graphql-core's Executor.async_helpers is no longer what resolvers get as "
        "info.async_helpers"
    )

    async def value(number: int) -> int:
        return number

    assert await helpers.gather([value(1), value(2)]) == [1, 2]
    pending = value(3)
    helpers.track([pending, 4])
    assert len(executor.background_futures) == 1, "track no longer settles in the background"
    await asyncio.gather(*executor.background_futures)
    gone = weakref.ref(executor)
    del executor
    assert gone() is None, "the executor is in a reference cycle again"
    assert await helpers.gather([value(5)]) == [5]
    helpers.track([4])  # no execution left to join: nothing to do


def test_the_executor_methods_signoff_overrides_keep_their_parameters() -> None:
    expected = {
        "execute_fields": [
            "self",
            "parent_type",
            "source_value",
            "path",
            "grouped_field_set",
            "position_context",
        ],
        "collect_subfields": ["self", "return_type", "field_details_list"],
        "execute_field": [
            "self",
            "parent_type",
            "source",
            "field_details_list",
            "path",
            "position_context",
        ],
    }
    for name, parameters in expected.items():
        found = _parameters(getattr(internals.StrawberryExecutionContext, name))
        assert found == parameters, f"{name} now takes {found}, not {parameters}"
    collect = _parameters(internals.collect_subfields)
    assert collect[:3] == ["schema", "fragments", "variable_values"], collect


def test_strawberrys_extension_runner_is_made_and_entered_as_planned_hooks_expect() -> None:
    made = _parameters(strawberry.Schema.create_extensions_runner)
    assert made == ["self", "execution_context", "extensions"], made
    runner = internals.SchemaExtensionsRunner
    assert _parameters(runner.__init__)[:3] == ["self", "execution_context", "extensions"]
    for method in ("operation", "parsing", "validation", "executing"):
        assert _parameters(getattr(runner, method)) == ["self"], f"runner.{method}"
    phases = {
        internals.OperationContextManager: "on_operation",
        internals.ParsingContextManager: "on_parse",
        internals.ValidationContextManager: "on_validate",
        internals.ExecutingContextManager: "on_execute",
    }
    for manager, hook_name in phases.items():
        assert issubclass(manager, internals.ExtensionContextManagerBase), manager
        assert hook_name == manager.HOOK_NAME, f"{manager.__name__}.HOOK_NAME"
    for method in ("__enter__", "__aenter__"):
        source = inspect.getsource(getattr(internals.ExtensionContextManagerBase, method))
        assert "self.hooks" in source, f"a phase's {method} no longer enters `hooks`"
    fields = _parameters(internals.WrappedHook)
    assert fields == ["extension", "hook", "is_async"], fields


def test_the_websocket_handlers_keep_what_signoff_overrides_and_reads() -> None:
    transport = internals.BaseGraphQLTransportWSHandler
    for method in ("handle", "handle_subscribe", "run_operation", "handle_pong", "send_message"):
        assert callable(getattr(transport, method, None)), f"graphql-transport-ws: {method}"
    # Signoff's connection-init timeout replaces Strawberry's, which its accept starts.
    assert "self.handle_connection_init_timeout()" in inspect.getsource(
        transport.on_request_accepted
    ), "graphql-transport-ws no longer starts its connection-init timeout with that method"
    timeout = inspect.getsource(transport.handle_connection_init_timeout)
    read = ("connection_init_wait_timeout", "connection_init_received", "connection_timed_out")
    for name in read:
        assert f"self.{name}" in timeout, f"graphql-transport-ws's timeout no longer reads {name}"
    legacy = internals.BaseGraphQLWSHandler
    for method in ("handle", "handle_start", "handle_async_results", "handle_connection_init"):
        assert callable(getattr(legacy, method, None)), f"graphql-ws: {method}"
    assert _parameters(legacy.handle_async_results) == [
        "self",
        "operation_id",
        "query",
        "operation_name",
        "variables",
    ]
    for handler, names in (
        (transport, ("connection_acknowledged", "operations")),
        (legacy, ("connection_acknowledged", "tasks")),
    ):
        source = inspect.getsource(handler.__init__)
        for name in names:
            assert f"self.{name}" in source, f"{handler.__name__} no longer sets {name}"
    adapter = inspect.getsource(internals.ASGIWebSocketAdapter.__init__)
    assert "self.ws" in adapter, "Strawberry's ASGI websocket adapter no longer keeps `ws`"


def test_uvicorns_httptools_protocol_hands_an_upgrade_over_as_signoff_expects() -> None:
    protocol = HttpToolsProtocol
    assert issubclass(internals.UpgradeFreedHttpProtocol, protocol)
    assert "self.handle_websocket_upgrade()" in inspect.getsource(protocol.data_received), (
        "uvicorn's httptools protocol no longer upgrades in handle_websocket_upgrade"
    )
    upgrade = inspect.getsource(protocol.handle_websocket_upgrade)
    assert "self.transport.set_protocol(protocol)" in upgrade, (
        "uvicorn's upgrade no longer hands the transport to the websocket protocol"
    )
    assert "self.parser = None" in inspect.getsource(protocol.connection_lost), (
        "uvicorn no longer lets go of the parser when an HTTP connection ends"
    )


class _Transport(asyncio.Transport):
    """Enough of a transport for uvicorn's ``connection_made``, noting its pauses."""

    def __init__(self) -> None:
        super().__init__()
        self.reading = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 8000) if name in ("sockname", "peername") else default

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True


async def test_a_new_http_connection_reads_first_at_its_turn() -> None:
    assert "self.transport = transport" in inspect.getsource(HttpToolsProtocol.connection_made), (
        "uvicorn's httptools protocol no longer keeps its transport in connection_made"
    )
    for method in (HttpToolsProtocol.connection_made, HttpToolsProtocol.__init__):
        assert "reading" not in inspect.getsource(method), (
            "uvicorn's httptools protocol now pauses or resumes reading itself at its start"
        )
    config = uvicorn.Config(app=_app)
    config.load()
    protocol_class = internals.http_protocol_taking_turns(Turnstile(1))
    transports = [_Transport(), _Transport()]
    for transport in transports:
        protocol = protocol_class(config=config, server_state=ServerState(), app_state={})
        protocol.connection_made(transport)
        assert transport.reading  # the turn is taken when the first bytes come
        protocol.data_received(b"GET / HTTP/1.1\r\n")  # the headers to come
    assert [t.reading for t in transports] == [True, False]  # one a turn
    for _ in range(3):  # the turnstile's turn, then the waiter's callback
        await asyncio.sleep(0)
    assert [t.reading for t in transports] == [True, True]


@ON_EITHER_LOOP
def test_a_new_connection_is_parsed_at_its_turn_on_either_loop(
    loop_factory: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    """Over a real socket, on asyncio and on uvloop (``signoff serve``'s loop), which starts
    reading after ``connection_made`` even when it paused there: the request that came
    before the connection's turn is answered only after it."""
    run_on(loop_factory, _answered_after_its_turn(sends_at_once=True))


@ON_EITHER_LOOP
def test_a_connection_takes_its_turn_when_its_first_bytes_come(
    loop_factory: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    """A storm's clients connect well before they send: a turn taken when the connection
    is made has passed by the time its request comes, which was then parsed at once."""
    run_on(loop_factory, _answered_after_its_turn(sends_at_once=False))


async def _answered_after_its_turn(*, sends_at_once: bool) -> None:
    loop = asyncio.get_running_loop()
    turn: asyncio.Future[None] = loop.create_future()
    held = sends_at_once  # until the client has connected, every turn comes at once

    class Held(Turnstile):
        def wait(self) -> asyncio.Future[None] | None:
            return turn if held else None

    config = uvicorn.Config(app=_answering_app)
    config.load()
    protocol_class = internals.http_protocol_taking_turns(Held(1))
    state = ServerState()
    server = await loop.create_server(
        lambda: protocol_class(config=config, server_state=state, app_state={}), "127.0.0.1", 0
    )
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        if not sends_at_once:
            await asyncio.sleep(0.2)  # the server has made the connection meanwhile
            held = True
        writer.write(b"GET / HTTP/1.1\r\nHost: signoff\r\n\r\n")
        await asyncio.sleep(0.2)  # the request reaches the server meanwhile
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(reader.read(1), 0.3)
        turn.set_result(None)
        status = await asyncio.wait_for(reader.readline(), 5)
        assert status.startswith(b"HTTP/1.1 204"), status
    finally:
        writer.close()
        for connection in list(state.connections):
            connection.shutdown()
        server.close()
        await server.wait_closed()


async def _answering_app(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def test_uvicorns_sans_io_protocol_has_what_prepared_frames_read() -> None:
    config = uvicorn.Config(app=_app, ws="websockets-sansio")
    config.load()
    protocol = WebSocketsSansIOProtocol(config=config, server_state=ServerState(), app_state={})
    for name in (
        "disconnected",
        "close_sent",
        "handshake_complete",
        "initial_response",
        "conn",
        "writable",
    ):
        assert hasattr(protocol, name), f"uvicorn's sans-I/O protocol has no {name} any more"
    assert hasattr(protocol.conn, "state") and hasattr(protocol.conn, "extensions")
    assert "self.transport" in inspect.getsource(WebSocketsSansIOProtocol.connection_made)
    assert internals.uvicorn_protocol(protocol.send) is protocol
    assert internals.uvicorn_protocol(_app) is None


async def test_uvicorn_reads_the_handshakes_request_and_response_only_until_it_completes() -> None:
    config = uvicorn.Config(app=_app, ws="websockets-sansio")
    config.load()
    protocol = WebSocketsSansIOProtocol(config=config, server_state=ServerState(), app_state={})
    source = inspect.getsource(WebSocketsSansIOProtocol)
    for name in ("request", "response"):
        uses = source.count(f"self.{name}")
        guarded = inspect.getsource(WebSocketsSansIOProtocol.handle_connect).count(f"self.{name}")
        after_accept = inspect.getsource(WebSocketsSansIOProtocol.send).count(f"self.{name}")
        assert uses == guarded + after_accept, (
            f"uvicorn's sans-I/O protocol reads `{name}` in a new place: check that "
            "uvicorn_forget_handshake may still drop it once the handshake is complete"
        )
    send = inspect.getsource(WebSocketsSansIOProtocol.send)
    assert "if not self.handshake_complete and self.initial_response is None:" in send, (
        "uvicorn's send no longer reads the handshake's response only before it completes"
    )
    parse = inspect.getsource(ServerProtocol.parse)
    handed_over = parse.index("self.events.append(request)")
    assert "request" not in parse[handed_over + len("self.events.append(request)") :], (
        "websockets' ServerProtocol.parse reads the request after handing it over: "
        "uvicorn_forget_handshake may no longer empty its headers"
    )
    request = Request("/graphql", Headers({"host": "example.org"}))
    protocol.__dict__.update(request=request, response=object())
    internals.uvicorn_forget_handshake(protocol)
    assert "request" in protocol.__dict__, "dropped before the handshake completed"
    assert request.headers, "emptied before the handshake completed"
    protocol.handshake_complete = True
    internals.uvicorn_forget_handshake(protocol)
    assert "request" not in protocol.__dict__ and "response" not in protocol.__dict__
    assert not request.headers


async def test_uvicorn_uses_of_its_queue_and_event_are_what_live_waits_offer() -> None:
    source = inspect.getsource(WebSocketsSansIOProtocol)
    offered = {"queue": {"put_nowait", "get", "empty"}, "writable": {"wait", "set", "clear"}}
    for name, methods in offered.items():
        used = set(re.findall(rf"self\.{name}\.(\w+)", source))
        assert used <= methods, f"uvicorn's protocol now calls {used - methods} of its {name}"
    config = uvicorn.Config(app=_app, ws="websockets-sansio")
    config.load()
    protocol = WebSocketsSansIOProtocol(config=config, server_state=ServerState(), app_state={})
    assert type(protocol.queue) is asyncio.Queue and type(protocol.writable) is asyncio.Event
    protocol.queue.put_nowait({"type": "websocket.connect"})
    internals.uvicorn_lean_waits(protocol)
    assert isinstance(protocol.queue, MessageQueue) and isinstance(protocol.writable, Flag)
    assert await protocol.receive() == {"type": "websocket.connect"}
    assert protocol.writable.is_set()


class _WritingTransport(_Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []

        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written.append(bytes(data))

    def close(self) -> None:
        self.closed = True


def _client_frame(opcode: Opcode, data: bytes, *, fin: bool = True) -> bytes:
    return Frame(opcode, data, fin=fin).serialize(mask=True)


def test_uvicorns_sans_io_protocol_reads_and_pauses_as_message_at_a_time_expects() -> None:
    receive = inspect.getsource(WebSocketsSansIOProtocol.receive)
    for line in (
        "message = await self.queue.get()",
        "if self.read_paused and self.queue.empty():",
        "self.read_paused = False",
        "self.transport.resume_reading()",
    ):
        assert line in receive, f"uvicorn's receive changed: no `{line}`"
    assert receive.count("\n") == 6, "uvicorn's receive does more than the subclass's does"
    queued = inspect.getsource(WebSocketsSansIOProtocol.send_receive_event_to_app)
    assert "self.transport.pause_reading()" in queued, (
        "uvicorn no longer pauses reading while a message waits for the app"
    )
    received = inspect.getsource(WebSocketsSansIOProtocol.data_received)
    assert "self.conn.receive_data(data)" in received and "self.handle_events()" in received


def _open_protocol() -> tuple[internals.MessageAtATimeProtocol, _WritingTransport]:
    """A connection as once its handshake is done."""
    config = uvicorn.Config(app=_app, ws=internals.MessageAtATimeProtocol)
    config.load()
    protocol = internals.MessageAtATimeProtocol(
        config=config, server_state=ServerState(), app_state={}
    )
    transport = _WritingTransport()
    protocol.connection_made(transport)
    handshake = (
        b"GET /graphql HTTP/1.1\r\nHost: signoff\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        b"Sec-WebSocket-Version: 13\r\n\r\n"
    )
    protocol.conn.receive_data(handshake)  # the handshake, as uvicorn's accept goes
    (request,) = protocol.conn.events_received()
    protocol.conn.send_response(protocol.conn.accept(request))
    protocol.conn.data_to_send()
    assert protocol.conn.state is State.OPEN
    return protocol, transport


async def test_a_burst_of_messages_is_parsed_as_the_app_reads_them() -> None:
    """A client's messages that came at once wait unparsed behind the one the app has not
    read yet; a ping among them is answered when it is reached, and reading resumes once
    nothing is left."""
    protocol, transport = _open_protocol()
    big = b"x" * 70_000  # a 64-bit length
    burst = b"".join(
        [
            _client_frame(Opcode.TEXT, b"one"),
            _client_frame(Opcode.TEXT, b"tw", fin=False),
            _client_frame(Opcode.CONT, b"o"),
            _client_frame(Opcode.PING, b""),
            _client_frame(Opcode.TEXT, b"y" * 300),  # a 16-bit length
            _client_frame(Opcode.TEXT, big),
        ]
    )
    protocol.data_received(burst[:-10])
    assert protocol.queue.qsize() == 1 and not transport.reading
    assert await protocol.receive() == {"type": "websocket.receive", "text": "one"}
    assert protocol.queue.qsize() == 1 and not transport.written
    assert await protocol.receive() == {"type": "websocket.receive", "text": "two"}
    assert transport.written, "the ping is answered as it is reached"
    assert await protocol.receive() == {"type": "websocket.receive", "text": "y" * 300}
    assert protocol.queue.empty() and transport.reading  # the last frame is not all there
    protocol.data_received(burst[-10:])
    assert await protocol.receive() == {"type": "websocket.receive", "text": big.decode()}
    assert transport.reading
    after = _client_frame(Opcode.TEXT, b"three") + _client_frame(Opcode.TEXT, b"four")
    protocol.data_received(after[:1])  # a header not all there
    assert protocol.queue.empty() and transport.reading
    protocol.data_received(after[1:])
    assert protocol.queue.qsize() == 1  # frames still told apart after a split one
    assert await protocol.receive() == {"type": "websocket.receive", "text": "three"}
    assert await protocol.receive() == {"type": "websocket.receive", "text": "four"}


async def test_the_clients_close_answers_the_apps_behind_messages_never_read() -> None:
    protocol, transport = _open_protocol()
    protocol.handshake_complete = True  # accepted
    protocol.data_received(_client_frame(Opcode.TEXT, b"one") + _client_frame(Opcode.TEXT, b"two"))
    await protocol.send({"type": "websocket.close", "code": 1000, "reason": ""})
    assert not transport.closed
    protocol.data_received(Frame(Opcode.CLOSE, b"\x03\xe8").serialize(mask=True))
    assert transport.closed, "the client's close went unread behind the app's messages"


async def _app(scope: Any, receive: Any, send: Any) -> None:
    return None


def test_strawberrys_json_scalar_answers_every_value_unchanged(schema: strawberry.Schema) -> None:
    json_type = internals.core_schema(schema).type_map["JSON"]
    assert json_type.coerce_output_value is internals.json_serialize  # type: ignore[attr-defined]
    for value in ({"a": [1]}, [1, "b"], "c", 2, 2.5, True):
        assert internals.json_serialize(value) is value


class _HandedOver(BaseException):
    """What a subscription's source stream raises to leave Strawberry's operation."""


async def test_a_base_exception_from_a_subscription_leaves_strawberrys_operation() -> None:
    """``live.websocket`` hands a subscription over by a ``BaseException`` raised in its
    source stream (``schema.live.Detached``): it must come out of the handler's
    ``run_operation`` as it went in, past the operation hooks, which see it."""
    seen: list[BaseException] = []

    class Hook(strawberry.extensions.SchemaExtension):
        def on_operation(self) -> Any:
            try:
                yield
            except BaseException as exc:
                seen.append(exc)
                raise

    @strawberry.type
    class Query:
        ok: bool = True

    @strawberry.type
    class Subscription:
        @strawberry.subscription
        async def events(self) -> AsyncGenerator[bool, None]:
            raise _HandedOver()
            yield True

    tiny = strawberry.Schema(query=Query, subscription=Subscription, extensions=[Hook])
    handler = internals.BaseGraphQLTransportWSHandler(
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,
        None,
        tiny,
        timedelta(seconds=1),
    )
    operation = Operation(handler, "1", "subscription { events }", None, None)
    with pytest.raises(_HandedOver):
        await handler.run_operation(operation)
    assert len(seen) == 1 and isinstance(seen[0], _HandedOver), (
        "an operation hook no longer sees a BaseException thrown in"
    )
    for method in ("send_next", "send_operation_message"):
        assert callable(getattr(Operation, method, None)), (
            f"graphql-transport-ws Operation: {method}"
        )


def test_strawberrys_type_check_of_an_object_never_reads_its_resolve_info(
    schema: strawberry.Schema,
) -> None:
    core = internals.core_schema(schema)
    proposal = core.type_map["Proposal"]
    is_type_of = proposal.is_type_of  # type: ignore[attr-defined]
    assert is_type_of is not None and internals.ignores_info(is_type_of), (
        "Strawberry's is_type_of now reads its resolve info: relations completed in place "
        "build one for every value again"
    )


def test_a_type_check_that_reads_its_info_is_told_apart() -> None:
    def reads(value: object, info: Any) -> bool:
        return info is not None

    def captures(value: object, info: Any) -> bool:
        return (lambda: info)() is not None

    def by_locals(value: object, info: Any) -> bool:
        return bool(locals())

    def ignores(value: object, _info: Any) -> bool:
        return isinstance(value, int)

    assert not any(internals.ignores_info(f) for f in (reads, captures, by_locals))
    assert internals.ignores_info(ignores)
