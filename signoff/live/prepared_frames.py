"""Prepared frames: a broadcast frame is framed once and its bytes written to every socket
(and every event stream that carries one operation).

Server frames are not masked, so without per-message deflate every connection gets the
same bytes, and framing once spares each connection the ASGI send path. Only uvicorn's
sans-I/O websockets protocol, on an open connection with no extension and an unpaused
transport, is written to directly; anything else takes the ASGI send (docs/design.md 8.5).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable

from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import Frame, Opcode

from signoff.internals import (
    uvicorn_forget_handshake,
    uvicorn_lean_waits,
    uvicorn_protocol,
    uvicorn_takes_frame_now,
)
from signoff.resolvers.feed.subscriptions import encode_cursor

# The scope key under which the server's own ``send`` is kept for a websocket.
SERVER_SEND = "signoff.server_send"
# Framed copies a payload keeps (a group's log keeps payloads for resumes); frames for
# further openings are framed for each send.
FRAMED_OPENINGS = 2


# The key under which a payload keeps its Server-Sent Event (one opening among the others).
_EVENT = "\x00event"


class Payload:
    """One frame's encoded ``payload`` for the event at ``cursor``, shared by every member
    of a broadcast group, with what is built from it for many connections alike: the
    websocket frames, one per distinct opening, usually one (clients mostly number their
    first operation alike), and the Server-Sent Event of a stream that carries one
    operation; at most ``FRAMED_OPENINGS`` of them."""

    __slots__ = ("_framed", "cursor", "text")

    def __init__(self, text: str, cursor: int = 0) -> None:
        self.text = text
        self.cursor = cursor
        self._framed: dict[str, bytes] = {}

    @property
    def size(self) -> int:
        """The bytes it may hold: its text and its framed copies."""
        return len(self.text) * (1 + FRAMED_OPENINGS)

    def message(self, opening: str) -> str:
        """The whole message: ``opening`` (``{"id":…,"type":…,"payload":``), the payload, ``}``."""
        return f"{opening}{self.text}}}"

    def framed(self, opening: str) -> bytes:
        """The message as an unmasked, unfragmented websocket text frame."""
        frame = self._framed.get(opening)
        if frame is None:
            data = self.message(opening).encode()
            frame = Frame(Opcode.TEXT, data).serialize(mask=False)
            if len(self._framed) < FRAMED_OPENINGS:
                self._framed[opening] = frame
        return frame

    def event(self) -> bytes:
        """The payload as a ``next`` Server-Sent Event whose id is its cursor (the stream of
        one operation, graphql-sse's distinct connections mode)."""
        event = self._framed.get(_EVENT)
        if event is None:
            event = f"id: {encode_cursor(self.cursor)}\nevent: next\ndata: {self.text}\n\n".encode()
            if len(self._framed) < FRAMED_OPENINGS:
                self._framed[_EVENT] = event
        return event


class SocketWriter:
    """Writes prepared frames to one uvicorn websocket connection's transport."""

    __slots__ = ("_protocol",)

    def __init__(self, protocol: WebSocketsSansIOProtocol) -> None:
        self._protocol = protocol

    @classmethod
    def of(cls, scope: Scope) -> SocketWriter | None:
        """A writer for the connection of ``scope``, or ``None`` where frames must go
        through ASGI (another server or protocol implementation)."""
        # Out of the scope, which the server's connection keeps: the send is a method of
        # that connection, and the two would be a reference cycle.
        protocol = uvicorn_protocol(scope.pop(SERVER_SEND, None))
        return None if protocol is None else cls(protocol)

    def settle(self) -> None:
        """Once the socket is accepted, and before anything is received on it: free what
        the server kept of the handshake, and give the connection lean waits
        (``live.waits``). A server holds thousands of these connections."""
        uvicorn_forget_handshake(self._protocol)
        uvicorn_lean_waits(self._protocol)

    def write(self, frame: Payload, opening: str) -> bool:
        """Write the frame if the connection takes it now; ``False``, with nothing written,
        where the caller must use the ordinary send (not open yet or any more, an
        extension in use, or the transport paused until the client reads)."""
        if not uvicorn_takes_frame_now(self._protocol):
            return False
        self._protocol.transport.write(frame.framed(opening))
        return True

    def write_framed(self, frame: bytes) -> bool:
        """``write`` for a frame framed already (``text_frame``)."""
        if not uvicorn_takes_frame_now(self._protocol):
            return False
        self._protocol.transport.write(frame)
        return True


@functools.lru_cache(maxsize=8)
def text_frame(text: bytes) -> bytes:
    """``text`` as an unmasked, unfragmented websocket text frame, framed once for every
    connection (a constant message, such as the keep-alive's ping)."""
    return Frame(Opcode.TEXT, text).serialize(mask=False)


class KeepServerSend:
    """Outermost middleware: keeps the server's own ``send`` of a websocket in its scope,
    before any middleware wraps it, for ``SocketWriter``. A plain function that hands back
    the app's awaitable, not a coroutine of its own: no frame of it waits with each of
    thousands of connections."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if scope["type"] == "websocket":
            scope[SERVER_SEND] = send
        return self.app(scope, receive, send)
