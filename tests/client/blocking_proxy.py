"""A TCP proxy on loopback that passes HTTP through and refuses websocket upgrades, as a
proxy that does not carry websockets does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


@contextlib.asynccontextmanager
async def refusing_websockets(upstream_port: int) -> AsyncIterator[int]:
    """Yield the proxy's port."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if b"upgrade: websocket" in head.lower():
            writer.write(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
            writer.close()
            await writer.wait_closed()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        up_writer.write(head)
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]
