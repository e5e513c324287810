"""A TCP proxy a test can cut and restore: an outage of PostgreSQL without touching the
machine's shared server, which other test runs use at the same time.

Cutting closes every open connection (as a server restart does) and refuses new ones
until ``restore``. The proxy runs its own event loop in a thread, so a test that blocks
its own loop does not stall the traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
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

    def __enter__(self) -> TcpProxy:
        self._thread.start()
        self.restore()
        return self

    def __exit__(self, *_: object) -> None:
        self.cut()
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
        self._server = await asyncio.start_server(
            self._pipe_pair, "127.0.0.1", self.port, reuse_address=True
        )

    async def _cut(self) -> None:
        self._cuts += 1
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _pipe_pair(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Known to a cut from the moment it is accepted: a connection still reaching the
        # upstream when the cut came survived it, so the database answered in the middle
        # of the outage (the likely cause of a worker once reporting one outage twice).
        self._writers.add(writer)
        cuts = self._cuts
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
