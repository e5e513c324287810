"""Lean stand-ins for ``asyncio.Queue`` and ``asyncio.Event``, for state held per socket.

A server holds thousands of idle websockets, and uvicorn gives each a queue of ASGI
messages and an event for its transport's pauses: five deques, each of which allocates a
block of 64 slots on creation (about 3.7 KiB per socket before anything is queued). These
keep the same behaviour with lists created only while something waits.
"""

from __future__ import annotations

import asyncio
from typing import Generic, Literal, TypeVar

T = TypeVar("T")


class MessageQueue(Generic[T]):
    """An unbounded FIFO queue: ``put_nowait``, ``get``, ``get_nowait``, ``empty``,
    ``qsize``, with ``asyncio.Queue``'s wake-ups (first come, first served; a getter
    cancelled after being woken passes the wake-up on)."""

    __slots__ = ("_getters", "_items")

    def __init__(self) -> None:
        self._items: list[T] = []
        self._getters: list[asyncio.Future[None]] | None = None

    def qsize(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def put_nowait(self, item: T) -> None:
        self._items.append(item)
        self._wake_next()

    def get_nowait(self) -> T:
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.pop(0)

    async def get(self) -> T:
        while not self._items:
            getter = asyncio.get_running_loop().create_future()
            if self._getters is None:
                self._getters = []
            self._getters.append(getter)
            try:
                await getter
            except BaseException:
                self._forget(getter)
                if self._items and not getter.cancelled():
                    self._wake_next()  # woken, then cancelled: the next getter takes it
                raise
            self._forget(getter)
        return self._items.pop(0)

    def _wake_next(self) -> None:
        for getter in self._getters or ():
            if not getter.done():
                getter.set_result(None)
                return

    def _forget(self, getter: asyncio.Future[None]) -> None:
        if self._getters is not None:
            if getter in self._getters:
                self._getters.remove(getter)
            if not self._getters:
                self._getters = None


class Flag:
    """A flag tasks wait to see set: ``is_set``, ``set``, ``clear``, ``wait``."""

    __slots__ = ("_value", "_waiters")

    def __init__(self, value: bool = False) -> None:
        self._value = value
        self._waiters: list[asyncio.Future[None]] | None = None

    def is_set(self) -> bool:
        return self._value

    def set(self) -> None:
        if self._value:
            return
        self._value = True
        for waiter in self._waiters or ():
            if not waiter.done():
                waiter.set_result(None)

    def clear(self) -> None:
        self._value = False

    async def wait(self) -> Literal[True]:
        if self._value:
            return True
        waiter = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        try:
            await waiter
            return True
        finally:
            if self._waiters is not None:
                self._waiters.remove(waiter)
                if not self._waiters:
                    self._waiters = None
