"""A TCP proxy on loopback that can cut every connection through it and hold new ones
back until it is let through again: a network that drops, then comes back."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class CuttingProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self._open = asyncio.Event()
        self._open.set()
        self._writers: set[asyncio.StreamWriter] = set()

    def cut(self) -> None:
        """Drop every connection; new ones wait until ``restore``."""
        self._open.clear()
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    def restore(self) -> None:
        self._open.set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self._open.wait()
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self._writers |= {writer, up_writer}
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        self._writers -= {writer, up_writer}


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


@contextlib.asynccontextmanager
async def cutting_proxy(upstream_port: int) -> AsyncIterator[CuttingProxy]:
    proxy = CuttingProxy(upstream_port)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    proxy.port = server.sockets[0].getsockname()[1]
    async with server:
        yield proxy
        proxy.cut()
