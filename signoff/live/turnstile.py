"""Websockets not yet acknowledged, and every subscription's set-up, take turns on the
event loop (docs/design.md section 8.5).

At most ``per_turn`` of these go on per turn of the loop, in arrival order: a storm's
hundreds of accepts, ``connection_init``s and subscriptions would otherwise all run in a
few turns, and another subscriber's request, which needs a turn at each statement, would
wait behind them. An acknowledged socket's pings, pongs and frames never wait here.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The scope key under which a websocket's ``Gate`` is kept, for its ``Connection``.
GATE = "signoff.gate"


class Turnstile:
    """At most ``per_turn`` callers of ``wait`` go on per turn of the event loop; the
    others wait in order for a later turn."""

    __slots__ = ("_passed", "_per_turn", "_ticking", "_waiters")

    def __init__(self, per_turn: int) -> None:
        self._per_turn = per_turn
        self._passed = 0  # gone on in this turn
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._ticking = False  # ``_turn`` is scheduled for the next turn

    def wait(self) -> asyncio.Future[None] | None:
        """``None``: go on now; otherwise a future that is done at the caller's turn."""
        if not self._waiters and self._passed < self._per_turn:
            self._passed += 1
            self._tick()
            return None
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._tick()
        return waiter

    def _tick(self) -> None:
        if not self._ticking:
            self._ticking = True
            asyncio.get_running_loop().call_soon(self._turn)

    def _turn(self) -> None:
        self._ticking = False
        self._passed = 0
        while self._waiters and self._passed < self._per_turn:
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled wait gives its turn to the next
                waiter.set_result(None)
                self._passed += 1
        if self._passed:
            self._tick()


class Gate:
    """One websocket's turns: its ``receive`` hands each message but a disconnect over at
    its turn of the ``Turnstile`` until the socket is acknowledged; after that only the
    subscriptions it starts take turns (``turn``). Kept for the socket's life, so small."""

    __slots__ = ("_acknowledged", "_receive", "_turnstile", "waiting")

    def __init__(self, receive: Receive, turnstile: Turnstile) -> None:
        self._receive = receive
        self._turnstile = turnstile
        self._acknowledged = False
        self.waiting: asyncio.Future[None] | None = None  # a received message's turn

    async def __call__(self) -> Message:
        message = await self._receive()
        if not self._acknowledged and message["type"] != "websocket.disconnect":
            await self.turn()
        return message

    async def turn(self) -> None:
        """Until this socket's turn."""
        waiter = self._turnstile.wait()
        if waiter is not None:
            self.waiting = waiter
            try:
                await waiter
            finally:
                self.waiting = None

    def open(self) -> None:
        """The socket is acknowledged: its messages no longer wait for turns."""
        self._acknowledged = True

    async def through(self) -> None:
        """Until no message of this socket waits for its turn: one that came in time is
        not the client's delay (the connection-init timeout waits for it)."""
        while self.waiting is not None:
            await asyncio.wait([self.waiting])  # cancelling this leaves the turn alone


class TakeTurns:
    """Middleware: each websocket's ``receive`` through a ``Gate`` of ``turnstile``. A
    plain function that hands back the app's awaitable: no frame of it waits with each of
    thousands of connections."""

    def __init__(self, app: ASGIApp, turnstile: Turnstile) -> None:
        self.app = app
        self.turnstile = turnstile

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if scope["type"] != "websocket":
            return self.app(scope, receive, send)
        gate = scope[GATE] = Gate(receive, self.turnstile)
        return self.app(scope, gate, send)
