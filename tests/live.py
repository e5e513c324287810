"""Real servers and real websocket clients for the live-event tests.

``signoff serve`` runs as a child process on a free port against the test
database; subscribers use the ``gql`` library over websockets, like a dashboard.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvloop
from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport
from sqlmodel import col, func, select
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from signoff.database import SessionMaker
from signoff.events import feed
from signoff.models import ChangeEvent
from tests import zygote
from tests.helpers import GraphQLClient, World, build_world
from tests.processes import LOOPBACK
from tests.redis_keys import unique_channel as unique_channel  # where tests import it from
from tests.zygote import WarmProcess

# asyncio's loop and uvloop, ``signoff serve``'s, which differ in when a new connection is
# read: a test taking ``loop_factory`` runs on each (``run_on``).
ON_EITHER_LOOP = pytest.mark.parametrize(
    "loop_factory", [asyncio.new_event_loop, uvloop.new_event_loop], ids=["asyncio", "uvloop"]
)


def run_on(
    loop_factory: Callable[[], asyncio.AbstractEventLoop], test: Coroutine[Any, Any, None]
) -> None:
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(test)


QUEUE_EVENTS = """
subscription($queueId: ID, $after: String) {
  queueEvents(queueId: $queueId, after: $after) {
    cursor kind entityType entityId entityVersion queueId proposalId occurredAt snapshot
    actor { name }
  }
}
"""

CURSOR = "query { changeFeedCursor }"

TRANSPORT_WS = Subprotocol("graphql-transport-ws")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Listening:
    """A Signoff server on a loopback port."""

    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/graphql"

    async def live_subscriptions(self) -> float:
        """How many live subscriptions the server counts now (``/metrics``)."""
        async with httpx.AsyncClient(base_url=self.url, timeout=5) as http:
            text = (await http.get("/metrics")).text
        return next(
            float(line.split()[1])
            for line in text.splitlines()
            if line.startswith("signoff_live_subscribers ")
        )

    async def subscriptions_live(self, count: float, within: float = 15) -> None:
        """Until the server counts ``count`` live subscriptions (``signoff_live_subscribers``
        on its ``/metrics``): a subscription joins its group asynchronously after
        ``subscribe`` is sent, and an event committed before that would not reach it."""
        live = -1.0
        async with httpx.AsyncClient(base_url=self.url, timeout=5) as http:
            try:
                async with asyncio.timeout(within):
                    while live != count:
                        text = (await http.get("/metrics")).text
                        live = next(
                            float(line.split()[1])
                            for line in text.splitlines()
                            if line.startswith("signoff_live_subscribers ")
                        )
                        if live != count:
                            await asyncio.sleep(0.02)
            except TimeoutError:
                raise AssertionError(
                    f"{self.url}: {live:g} live subscriptions after {within} s, not {count}"
                ) from None


@dataclass
class Server(Listening):
    """One ``signoff serve`` process."""

    process: subprocess.Popen[bytes] | WarmProcess
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextlib.contextmanager
def server_log_on_failure(server: Server, lines: int = 12) -> Iterator[None]:
    """A failed assertion's message ends with the last lines of the server's log."""
    try:
        yield
    except AssertionError as exc:
        tail = "\n".join(server.log.read_text(errors="replace").splitlines()[-lines:])
        if not tail:
            raise
        raise AssertionError(f"{exc}\n--- end of {server.log.name} ---\n{tail}") from exc


def _spawn(
    argv: list[str], environ: dict[str, str], log: Path
) -> subprocess.Popen[bytes] | WarmProcess:
    warm = zygote.spawn(argv, env=environ, stdout=log)
    if warm is not None:
        return warm
    with log.open("wb") as out:
        return subprocess.Popen(argv, env=environ, stdout=out, stderr=subprocess.STDOUT)


# A free port can be taken by another process (another pytest-xdist worker's server, a
# client's outgoing connection) between ``free_port`` and the server's bind: a server
# that finds its port busy is started again on another one, this many times at most.
PORT_TRIES = 3
# Signoff's own refusal, and uvicorn's when the port was taken after Signoff's check.
PORT_BUSY = ("is in use", "address already in use")


class PortBusy(RuntimeError):
    """The port chosen for a server was taken before it could listen there."""


async def start_server(database_url: str, log_dir: Path, **env: str) -> Server:
    """Start ``python -m signoff serve`` and wait until ``/healthz`` answers (on
    ``SIGNOFF_PORT`` when ``env`` names one, to restart a server where it was; on a free
    port otherwise, another one if that was taken in the meantime)."""
    if "SIGNOFF_PORT" in env:
        return await _start_server(database_url, log_dir, int(env["SIGNOFF_PORT"]), **env)
    for _ in range(PORT_TRIES - 1):
        try:
            return await _start_server(database_url, log_dir, free_port(), **env)
        except PortBusy:
            continue
    return await _start_server(database_url, log_dir, free_port(), **env)


async def _start_server(database_url: str, log_dir: Path, port: int, **env: str) -> Server:
    log = log_dir / f"serve-{port}.log"
    environ = {
        **os.environ,
        "SIGNOFF_DATABASE_URL": database_url,
        "SIGNOFF_PORT": str(port),
        "SIGNOFF_LOG_LEVEL": "warning",
        "SIGNOFF_DELIVERY_ALLOW_NETWORKS": LOOPBACK,
        **env,
    }
    process = _spawn([sys.executable, "-m", "signoff", "serve"], environ, log)
    server = Server(port=port, process=process, log=log)
    deadline = time.monotonic() + 30
    async with httpx.AsyncClient() as http:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                output = log.read_text()[-2000:]
                if any(busy in output for busy in PORT_BUSY) and "SIGNOFF_PORT" not in env:
                    raise PortBusy(output)
                raise RuntimeError(f"signoff serve exited: {output}")
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get(f"{server.url}/healthz")).status_code == 200:
                    return server
            await asyncio.sleep(0.1)
    server.stop()
    raise RuntimeError(f"signoff serve did not start: {log.read_text()[-2000:]}")


@contextlib.asynccontextmanager
async def http_gql(server: Server, sessionmaker: SessionMaker) -> AsyncIterator[GraphQLClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        yield GraphQLClient(http, sessionmaker)


@dataclass
class Subscription:
    """A running subscription over graphql-transport-ws, collecting what it receives."""

    ws_url: str
    token: str
    query: str
    variables: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    error: BaseException | None = None
    _task: asyncio.Task[None] | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def __aenter__(self) -> Subscription:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task

    async def _run(self) -> None:
        transport = WebsocketsTransport(
            url=self.ws_url,
            init_payload={"authorization": f"Bearer {self.token}"},
            subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
        )
        try:
            async with Client(transport=transport) as session:
                request = gql(self.query)
                request.variable_values = self.variables
                async for result in session.subscribe(request):
                    self.events.append(next(iter(result.values())))
                    self._changed.set()
        except Exception as exc:
            self.error = exc
            self._changed.set()

    async def wait_for(self, count: int, within: float = 15) -> list[dict[str, Any]]:
        """Wait until ``count`` events arrived (or fail with what did)."""
        deadline = time.monotonic() + within
        while len(self.events) < count:
            if self.error is not None:
                raise AssertionError(f"subscription failed: {self.error!r}") from self.error
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                kinds = [e["kind"] for e in self.events]
                raise AssertionError(f"expected {count} events, got {len(kinds)}: {kinds}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=remaining)
        return self.events

    async def quiet(self, seconds: float = 1.0) -> list[dict[str, Any]]:
        """Wait a while and return everything received: for "nothing more arrives"."""
        await asyncio.sleep(seconds)
        return self.events


async def open_transport_ws(
    ws_url: str, init_payload: dict[str, Any], **options: Any
) -> ClientConnection:
    """A raw graphql-transport-ws connection, acknowledged; the caller closes it.

    Unlike ``Subscription`` (the gql library re-prints documents), the caller sends
    the exact text of a document, comments and all; ``options`` go to ``connect``.
    """
    # Deadlines for a busy machine (a thousand sockets opening at once beside other
    # pytest-xdist workers): a server that never answers still fails the test.
    ws = await connect(
        ws_url, subprotocols=[TRANSPORT_WS], open_timeout=30, close_timeout=2, **options
    )
    try:
        await ws.send(json.dumps({"type": "connection_init", "payload": init_payload}))
        message = json.loads(await asyncio.wait_for(ws.recv(), timeout=30))
        if message.get("type") != "connection_ack":
            raise AssertionError(f"expected connection_ack, got {message}")
    except BaseException:
        ws.transport.abort()
        raise
    return ws


async def head_cursor(gql_client: GraphQLClient, token: str) -> str:
    cursor: str = (await gql_client(CURSOR, token=token))["changeFeedCursor"]
    return cursor


def queue_subscription(
    server: Listening,
    token: str,
    *,
    queue_id: str | None = None,
    after: str | None = None,
    query: str = QUEUE_EVENTS,
) -> Subscription:
    return Subscription(server.ws_url, token, query, {"queueId": queue_id, "after": after})


# A proposal with every relation a waiting agent's client selects.
PROPOSAL_RELATIONS = """id state revision executor executedBy { name } target { id name }
  deadlinePolicy { action reason }
  approvals { decision reason revision approver { name } }
  revisions { revision digest payload reason amendedBy { name } }
  attempts { attemptNumber responseClass statusCode errorCode finishedAt }"""


async def feed_settled(sessionmaker: SessionMaker, within: float = 10) -> None:
    """Wait until every committed change event has its cursor (the relay stamps strays)."""
    deadline = time.monotonic() + within
    while True:
        async with sessionmaker() as session:
            if not await feed.has_pending(session):
                return
        if time.monotonic() > deadline:
            raise AssertionError("change events were not stamped in time")
        await asyncio.sleep(0.05)


async def feed_published(sessionmaker: SessionMaker, within: float = 10) -> None:
    """Wait until every committed change event has been published: one made by another
    process without Redis (a CLI command) reaches the servers through their relay, a
    few seconds later, and a subscription opened before that would see it."""
    unpublished = select(func.count()).where(col(ChangeEvent.published_at).is_(None))
    deadline = time.monotonic() + within
    while True:
        async with sessionmaker() as session:
            waiting = (await session.exec(unpublished)).one()
            await session.commit()
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{waiting} change events were not published in time")
        await asyncio.sleep(0.05)


async def stamp_now(sessionmaker: SessionMaker) -> None:
    """Stamp committed events from the test itself, as a relay tick would."""
    async with sessionmaker() as session:
        await feed.stamp_pending(session)
        await session.commit()


async def world_at_head(http: GraphQLClient, *, stamp: bool = False) -> tuple[World, str]:
    """A new queue and target over ``http``, and its first reviewer's cursor at the head
    of the feed once every event so far is stamped: a subscription from there sees only
    what the test does next. With ``stamp`` the test stamps them itself, for servers
    whose relay is set too slow to (``stamp_now``)."""
    world = await build_world(http)
    if stamp:
        await stamp_now(http.sessionmaker)
    else:
        await feed_settled(http.sessionmaker)
    return world, await head_cursor(http, world.reviewers[0])


async def subscriptions_live(app: Any, count: int, within: float = 15) -> None:
    """Until the app's broadcaster counts ``count`` live subscriptions: they join their
    groups asynchronously after ``subscribe`` is sent, and what a test does before that
    would reach them as a replay."""
    async with asyncio.timeout(within):
        while app.state.broadcaster.subscriber_count < count:  # noqa: ASYNC110
            await asyncio.sleep(0.02)


class InProcessServer(Listening):
    """An app served by uvicorn inside the test's event loop, over real sockets, so a test
    can look at the app's state (for example how often frames were computed)."""


@contextlib.asynccontextmanager
async def serve_in_process(app: Any, *, deflate: bool = False) -> AsyncIterator[InProcessServer]:
    import uvicorn

    from signoff.internals import (
        MessageAtATimeProtocol,
        UpgradeFreedHttpProtocol,
        http_protocol_taking_turns,
    )

    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        # as ``signoff serve`` runs it
        http=http_protocol_taking_turns(app.state.turnstile)
        if hasattr(app.state, "turnstile")
        else UpgradeFreedHttpProtocol,
        ws=MessageAtATimeProtocol,
        ws_per_message_deflate=deflate,
        lifespan="off",  # the test's fixture runs the app's lifespan
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    deadline = time.monotonic() + 10
    while not server.started:
        if task.done() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        await asyncio.sleep(0.02)
    try:
        yield InProcessServer(port)
    finally:
        server.should_exit = True
        await task


@dataclass
class Stream:
    """One subscription on a raw graphql-transport-ws socket: its ``next`` payloads, the
    error or ``complete`` that ended it, and the socket's close code."""

    ws: ClientConnection
    frames: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    completed: bool = False
    close_code: int | None = None
    ended_at: float | None = None  # time.monotonic() when the stream was first seen ended
    _task: asyncio.Task[None] | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def ended(self) -> bool:
        return self.completed or bool(self.errors) or self.close_code is not None

    async def read(self) -> None:
        try:
            async for raw in self.ws:
                message = json.loads(raw)
                if message["type"] == "next" and message["payload"].get("errors"):
                    self.errors.extend(message["payload"]["errors"])  # the source stream failed
                elif message["type"] == "next":
                    self.frames.append(message["payload"])
                elif message["type"] == "error":
                    self.errors.extend(message["payload"])
                elif message["type"] == "complete":
                    self.completed = True
                elif message["type"] == "ping":
                    await self.ws.send(json.dumps({"type": "pong"}))
                self._note_end()
                self._changed.set()
        except ConnectionClosed:
            pass
        self.close_code = self.ws.close_code
        self._note_end()
        self._changed.set()

    def _note_end(self) -> None:
        if self.ended_at is None and self.ended:
            self.ended_at = time.monotonic()

    async def until(self, done: Callable[[Stream], bool], within: float = 10) -> None:
        """Wait until ``done(self)`` holds (or fail with what arrived)."""
        try:
            async with asyncio.timeout(within):
                while not done(self):
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(
                f"after {within} s: {len(self.frames)} frames, errors {self.errors}, "
                f"completed {self.completed}, closed {self.close_code}"
            ) from None

    async def close(self) -> None:
        await self.ws.close()
        if self._task is not None:
            await self._task


@contextlib.asynccontextmanager
async def open_stream(
    server: Listening, token: str, query: str, variables: dict[str, Any]
) -> AsyncIterator[Stream]:
    """A subscription on a socket of its own, read in the background."""
    ws = await open_transport_ws(server.ws_url, {"authorization": f"Bearer {token}"})
    stream = Stream(ws)
    payload = {"query": query, "variables": variables}
    await ws.send(json.dumps({"type": "subscribe", "id": "1", "payload": payload}))
    stream._task = asyncio.create_task(stream.read())
    try:
        yield stream
    finally:
        await stream.close()
