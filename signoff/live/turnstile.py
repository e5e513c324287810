"""Websockets not yet acknowledged, and every subscription's set-up, take turns on the
event loop (docs/design.md section 8.5).

At most ``per_turn`` of these go on per turn of the loop, in arrival order, and after a
busy turn none for a while: a storm's hundreds of accepts, ``connection_init``s and
subscriptions would otherwise fill the loop, and another subscriber's request, which
needs a turn at each statement, would wait behind them. An acknowledged socket's pings,
pongs and frames never wait here.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The scope key under which a websocket's ``Gate`` is kept, for its ``Connection``.
GATE = "signoff.gate"


class Turnstile:
    """At most ``per_turn`` callers of ``wait`` go on per turn of the event loop; the
    others wait in order for a later turn. While callers wait, a turn that comes more than
    ``busy`` seconds after it was asked for (the loop's iteration was long: what went on,
    and everything else it serves) is put off by ``rest`` times that, so that what waits
    here takes at most about ``1 / (1 + rest)`` of a busy loop."""

    __slots__ = (
        "_asked_at",
        "_busy",
        "_passed",
        "_per_turn",
        "_rest",
        "_rested",
        "_ticking",
        "_waiters",
    )

    def __init__(self, per_turn: int, busy: float = 0.0, rest: float = 0.0) -> None:
        self._per_turn = per_turn
        self._busy = busy
        self._rest = rest
        self._passed = 0  # gone on in this turn
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._ticking = False  # ``_turn`` is scheduled for the next turn
        self._asked_at = 0.0  # when it was
        self._rested = False  # the scheduled turn comes after a rest

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
            self._asked_at = time.perf_counter()
            asyncio.get_running_loop().call_soon(self._turn)

    def _turn(self) -> None:
        took = time.perf_counter() - self._asked_at
        if self._rest and took > self._busy and not self._rested and self._waiters:
            self._rested = True
            self._passed = self._per_turn  # none go on meanwhile
            asyncio.get_running_loop().call_later(self._rest * took, self._turn)
            return
        self._rested = False
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
