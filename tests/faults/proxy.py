"""A TCP proxy a test can cut and restore: an outage of PostgreSQL without touching the
machine's shared server, which other test runs use at the same time.

Cutting closes every open connection (as a server restart does) and refuses new ones
until ``restore``. The proxy runs its own event loop in a thread, so a test that blocks
its own loop does not stall the traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Coroutine
from typing import Any

from tests.processes import free_port

CHUNK = 65_536


class TcpProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._cuts = 0
        # Connections accepted so far: a test's failure can tell a client that kept
        # reconnecting from one that waited on a single connection.
        self.accepted = 0

    def __enter__(self) -> TcpProxy:
        self._thread.start()
        self.restore()
        return self

    def __exit__(self, *_: object) -> None:
        self._run(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def cut(self) -> None:
        """Drop every connection and refuse new ones."""
        self._run(self._cut())

    def restore(self) -> None:
        """Accept connections again, on the same port."""
        self._run(self._listen())

    def _run(self, coroutine: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)

    async def _listen(self) -> None:
        # Each listener knows the cuts before it: asyncio starts a connection's handler a few
        # loop turns after accepting it, so a cut can fall in between, and the handler has
        # to learn from its listener, not from the moment it starts, that a cut came.
        handler = functools.partial(self._pipe_pair, cuts=self._cuts)
        self._server = await asyncio.start_server(
            handler, "127.0.0.1", self.port, reuse_address=True
        )

    async def _close(self) -> None:
        """Cut, then let every connection's handling finish, so that no socket is left for
        the garbage collector to find (and warn about) in some later test."""
        await self._cut()
        await settle()

    async def _cut(self) -> None:
        self._cuts += 1
        if self._server is not None:
            await _close_listener(self._server)
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _pipe_pair(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, cuts: int
    ) -> None:
        # A connection accepted before a cut, or still reaching the upstream when it came,
        # must not survive it: the database would answer in the middle of the outage, and
        # the client would report one outage as two.
        self.accepted += 1
        if self._cuts != cuts:
            writer.transport.abort()
            return
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()
            self._writers.discard(writer)
            return
        if self._cuts != cuts:
            up_writer.transport.abort()
            writer.transport.abort()
            self._writers.discard(writer)
            return
        self._writers.add(up_writer)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        self._writers.difference_update({writer, up_writer})

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(CHUNK):
                writer.write(data)
                await writer.drain()
        writer.transport.abort()


async def _close_listener(server: asyncio.Server) -> None:
    """Stop accepting, then close the listening socket.

    asyncio sets up a connection it accepted a loop turn later, and on Python 3.11 one set
    up after its server closed fails on an assertion and leaves its socket open, neither
    answering nor closed, until the garbage collector finds it (a ResourceWarning in some
    later test). So accepting stops first, and the accepted ones are set up, to be dropped
    by their handler, before the socket closes; what waits in the backlog is refused.
    """
    loop = asyncio.get_running_loop()
    for sock in server.sockets:
        loop.remove_reader(sock.fileno())
    await asyncio.sleep(0)
    server.close()


async def settle() -> None:
    """Wait until every other task of the running loop has ended, then let the transports
    they closed close their sockets (which happens on a later loop turn)."""
    this = asyncio.current_task()
    while others := [task for task in asyncio.all_tasks() if task is not this]:
        await asyncio.wait(others)
    for _ in range(3):
        await asyncio.sleep(0)
