"""The fault tests' proxy: a cut leaves no connection alive, even one the listener had
accepted but not yet handed to its handler when the cut came."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from tests.faults.proxy import TcpProxy, settle

ROUNDS = 40
CONNECTIONS_PER_ROUND = 8


@pytest.fixture
def echo_port() -> Iterator[int]:
    """An upstream that echoes what it reads, on its own loop in a thread."""

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(1024):
                writer.write(data)
                await writer.drain()
        writer.transport.abort()

    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(echo, "127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield server.sockets[0].getsockname()[1]
    loop.call_soon_threadsafe(server.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)
    loop.run_until_complete(settle())  # the echo handlers see the proxy's closes and end
    loop.close()


def _connect_many(port: int, into: list[socket.socket]) -> None:
    for _ in range(CONNECTIONS_PER_ROUND):
        with contextlib.suppress(OSError):  # refused: the cut came first
            into.append(socket.create_connection(("127.0.0.1", port), timeout=1))


def _answers(sock: socket.socket) -> bool:
    try:
        sock.sendall(b"?")
        sock.settimeout(0.2)
        return sock.recv(1) == b"?"
    except OSError:
        return False
    finally:
        sock.close()


def test_a_cut_leaves_no_connection_alive(echo_port: int) -> None:
    """Connections race each cut; none opened before it may still reach the upstream."""
    survivors = 0
    reached = 0
    with TcpProxy("127.0.0.1", echo_port) as proxy:
        for n in range(ROUNDS):
            socks: list[socket.socket] = []
            connecting = threading.Thread(target=_connect_many, args=(proxy.port, socks))
            connecting.start()
            threading.Event().wait(0.0003 * (n % 5))
            proxy.cut()
            connecting.join()
            survivors += sum(_answers(sock) for sock in socks)
            proxy.restore()
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=1) as after:
                reached += _answers(after)
    assert survivors == 0
    assert reached == ROUNDS, "the proxy stopped passing traffic after a restore"
