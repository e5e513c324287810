"""Fan-out benchmark: Signoff against a floor, in the same run, with the same clients.

Three servers are measured one after the other, each in its own process on
127.0.0.1, by the SAME ``--workers`` client processes running the same code:

- **Signoff**: one ``signoff serve`` (fresh SQLite file unless ``--database-url``;
  embedded hub unless ``--redis-url``; ``SIGNOFF_SUBSCRIBER_BUFFER=1024``, no live
  bounds per token), or
  ``--servers`` N of them on the same PostgreSQL database and Redis. K
  subscribers on one queue run ``queueEvents(queueId: $q, after: $a) { cursor kind
  entityId proposal { id state } task { id state } }``; a mutation is
  ``createTask`` (one ``task.created`` event).
- **floor**: ``bench/fanout_floor.py``, a plain Starlette websocket endpoint on
  uvicorn (same websockets implementation, per-message deflate off) that answers
  ``connection_init`` and ``subscribe`` and, per ``POST /mutate``, sends ONE
  pre-encoded frame of the same shape to every subscriber. Always one process.
- **Signoff SSE**: Signoff again, on a server of its own, its K subscribers running the
  same subscription over Server-Sent Events (graphql-sse's distinct connections mode: a
  POST with ``Accept: text/event-stream``, read on a plain asyncio connection), measured
  the same way; ``--no-sse`` leaves it out. The report compares its p99 and RSS per idle
  subscriber with the websocket side's.

Each subscriber connects (``compression=None``, so it offers no per-message
deflate), sends ``connection_init`` with ``{"authorization": "Bearer <token>"}``,
waits for ``connection_ack``, subscribes and records the arrival time of every
``task.created`` frame. M mutations are then sent one at a time at up to
``--rate`` per second.

Each run makes its own queue and reviewer token, so runs can repeat on one
PostgreSQL database (which keeps their rows); a fresh SQLite file is removed on exit.
The servers use the key of the current directory's ``signoff.key`` (or whatever
``SIGNOFF_SECRET_KEY*`` the environment names): a PostgreSQL database sealed with
another key is refused, so give the bench one of its own (``createdb signoff_bench``).

**Resume storm** (``--resume-cursors`` C, default 0: everyone subscribes after the
feed's newest cursor). Before anyone connects, 2C tasks are created in the queue one
at a time and the feed's cursor (``changeFeedCursor``) is read after each: a history
of 2C events. C resume points are spread evenly over it: the k-th is the cursor read
before history event 2k, so it misses events 2k .. 2C-1 (all 2C for k = 0, the last
two for k = C-1). Subscriber i (0 <= i < K) subscribes with ``after`` = resume point
(i // N) % C, N being ``--servers`` (with one server: i % C), so consoles away for
different spans, and each server gets all C of them. Every client process opens all
its connections at once (``--connect-interval`` is not used), as in a reconnect
storm. A subscriber first receives the frames it missed, then the M live frames.
The floor's subscribers connect in the same storm and resume nothing (a plain
broadcast, the reference).

**Several servers** (``--servers`` N > 1, needs ``--database-url`` and
``--redis-url``): N ``signoff serve`` processes on the same database and Redis
channel; subscriber i connects to server i % N, every mutation goes to the first
server. Server RSS and CPU figures are sums over the N processes; the floor stays
one process serving the same K clients.

Definitions (identical for both servers):

- **latency**: a live frame's arrival time minus the time the response to its
  mutation was received (wall clock, same host); p50/p95/p99 are nearest-rank. A
  frame can arrive a little before the mutating client has read the response,
  so small negative values are possible. Replayed frames are not in it.
- **frames/s**: live frames received by all subscribers / (arrival of the last
  frame - sending of the first mutation). It cannot exceed K x ``--rate``, so the
  ratio only says something where at least one side falls behind the offered load.
- **RSS per idle subscriber**: (server VmRSS with every subscriber connected and
  subscribed, and in resume mode caught up, ``--settle`` seconds after the last
  subscribe or the last replayed frame and before any mutation) - (VmRSS before the
  first subscriber connected, after the history was made), divided by K. Before
  that baseline Signoff serves ``WARM_READS`` concurrent reads on each process, so
  its database pool is open in both readings (see ``warm_pool``).
- **every frame delivered**: K x M live frames, each subscriber got each
  mutation's frame exactly once (whichever server it is on), no ``next`` frame
  carried errors, and no subscriber failed or timed out.
- **caught up**: a subscriber has received as many history frames (or error
  frames) as events it missed. The mutations start once all have, or once
  ``--catch-up-timeout`` has passed.
- **replayed frames** (resume mode): history frames received by all subscribers,
  against the events each missed. **every replay exact**: every subscriber caught
  up and received exactly the events after its cursor, each once (else a
  duplicate), none missing (a gap), none at or before its cursor (extra), in
  cursor order (else counted once per subscriber as out of order).
- **storm: connect to caught up**: from the first connection attempt to the last
  subscriber caught up (the floor: subscribed), over all client processes.
- **broadcast executions per live event**: only printed where the server exports
  a ``signoff_*executions*`` counter at ``/metrics``: its increase over the
  mutations and the drain, summed over the servers, divided by M.
- **mutations/s achieved**: mutations are sent one at a time (the next one
  after the previous response, at most ``--rate`` per second), so a server
  whose mutations slow down under fan-out load is offered fewer of them.

Bounded: connecting gets ``--connect-timeout`` seconds (plus ``--catch-up-timeout``
for the replays in resume mode), and after the last mutation is answered the
subscribers get ``--drain-timeout`` seconds to receive what is left; then they are
cancelled and counted. Every child process is stopped on exit.

    .venv/bin/python bench/fanout.py --subscribers 1000 --rate 20 --mutations 200
    .venv/bin/python bench/fanout.py --subscribers 1000 --rate 5 --mutations 200
    .venv/bin/python bench/fanout.py --subscribers 5000 --mutations 50
    .venv/bin/python bench/fanout.py --subscribers 1000 --rate 5 --mutations 20 \\
        --resume-cursors 50
    .venv/bin/python bench/fanout.py --subscribers 1000 --rate 5 --mutations 20 \\
        --resume-cursors 50 --database-url postgresql://postgres@127.0.0.1:5432/signoff_bench \\
        --redis-url redis://127.0.0.1:6379/0
    .venv/bin/python bench/fanout.py --subscribers 1000 --rate 5 --mutations 200 --servers 2 \\
        --database-url postgresql://postgres@127.0.0.1:5432/signoff_bench \\
        --redis-url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import multiprocessing
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx

HOST = "127.0.0.1"
WARM_READS = 64
SUBSCRIBE = (
    "subscription($q: ID, $a: String) { queueEvents(queueId: $q, after: $a) "
    "{ cursor kind entityId proposal { id state } task { id state } } }"
)
CREATE_TASK = "mutation($i: CreateTaskInput!) { createTask(input: $i) { id } }"
EVENT_KIND = "task.created"
HISTORY_PER_CURSOR = 2  # resume mode: history events per distinct cursor
CURSOR_TIMEOUT = 30.0  # seconds for a history event to get its cursor
# A counter of frames computed by broadcast groups, if the server exports one; its
# ``_created`` sample (a timestamp) does not match.
EXECUTIONS = re.compile(r"signoff_\w*executions(_total)?")
FLOOR_SCRIPT = Path(__file__).with_name("fanout_floor.py")
OPEN_FILES = 65_536  # 10,000 subscribers: as many sockets in the clients and the servers

T = TypeVar("T")


# --- client processes ---------------------------------------------------------


@dataclass(frozen=True)
class Resume:
    """One cursor subscribers resume after, and the first history event it misses."""

    cursor: str
    missed_from: int  # index into ``Plan.history``: it replays history[missed_from:]


@dataclass(frozen=True)
class Plan:
    """What a server's subscribers are given by ``Target.prepare``."""

    token: str
    variables: dict[str, str]
    # Resume mode: the entity ids of the history events, in cursor order, and the cursors
    # subscribers resume after (subscriber i: resumes[(i // servers) % len(resumes)]).
    history: list[str] = field(default_factory=list)
    resumes: list[Resume] = field(default_factory=list)


@dataclass(frozen=True)
class SubscriberSpec:
    """What one client process runs against one server."""

    urls: list[str]  # subscriber i connects to urls[i % len(urls)]
    first: int  # the index of this process's first subscriber over all processes
    plan: Plan
    count: int
    mutations: int
    connect_interval: float
    connect_timeout: float
    catch_up_timeout: float
    drain_timeout: float
    transport: str = "websocket"  # or "sse": graphql-sse's distinct connections mode

    def assign(self, index: int) -> tuple[str, dict[str, str], list[str]]:
        """Subscriber ``index``'s server, subscription variables and the events it missed."""
        servers = len(self.urls)
        url = self.urls[index % servers]
        if not self.plan.resumes:
            return url, self.plan.variables, []
        resume = self.plan.resumes[(index // servers) % len(self.plan.resumes)]
        missed = self.plan.history[resume.missed_from :]
        return url, {**self.plan.variables, "a": resume.cursor}, missed


@dataclass
class Ready:
    """A client process's subscribers have all subscribed and caught up, or failed."""

    subscribed: int
    caught_up: int
    failed: int
    deflate: int
    extensions: Counter[str]
    started: float  # when the first subscriber began to connect (wall clock)
    last_caught_up: float | None  # when the last one received the end of its replay


@dataclass
class Replayed:
    """The history events subscribers received, against the ones each had missed."""

    expected: int = 0
    frames: int = 0
    duplicates: int = 0  # a missed event received again
    gaps: int = 0  # a missed event never received
    extra: int = 0  # a history event at or before the subscriber's cursor
    disordered: int = 0  # subscribers whose replay was not in cursor order

    def add(self, missed: list[str], received: list[str]) -> None:
        wanted = set(missed)
        once = list(dict.fromkeys(received))
        got = set(once)
        self.expected += len(missed)
        self.frames += len(received)
        self.duplicates += len(received) - len(once)
        self.gaps += len(wanted - got)
        self.extra += len(got - wanted)
        self.disordered += [e for e in once if e in wanted] != [e for e in missed if e in got]

    def merge(self, other: Replayed) -> None:
        for name in ("expected", "frames", "duplicates", "gaps", "extra", "disordered"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def exact(self) -> bool:
        return self.frames == self.expected and self.gaps == self.extra == self.disordered == 0


@dataclass
class Received:
    """What a client process's subscribers received once the mutations were sent."""

    arrivals: dict[str, list[float]]
    failed: int
    timed_out: int
    duplicates: int
    error_frames: int
    errors: Counter[str]
    sample: str | None
    replayed: Replayed


@dataclass
class _Stream:
    """What one subscriber has received so far."""

    missed: list[str]  # the history events it must replay, in cursor order
    replayed: list[str] = field(default_factory=list)
    replay_errors: int = 0  # error frames in place of a replayed event
    live: set[str] = field(default_factory=set)
    live_errors: int = 0  # each stands for one event this subscriber will not get
    settled: bool = False  # counted as caught up or failed by the tally

    @property
    def caught_up(self) -> bool:
        return len(self.replayed) + self.replay_errors >= len(self.missed)


@dataclass
class _Tally:
    total: int
    history: frozenset[str]
    subscribed: int = 0
    caught_up: int = 0
    failed_early: int = 0
    failed_late: int = 0
    deflate: int = 0
    duplicates: int = 0
    error_frames: int = 0
    sample: str | None = None
    started: float = field(default_factory=time.time)
    last_caught_up: float | None = None
    extensions: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    arrivals: dict[str, list[float]] = field(default_factory=dict)
    replayed: Replayed = field(default_factory=Replayed)
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    _settled_count: int = 0

    def check_caught_up(self, stream: _Stream) -> None:
        if not stream.settled and stream.caught_up:
            self.caught_up += 1
            self.last_caught_up = time.time()
            self.settle(stream)

    def settle(self, stream: _Stream) -> None:
        """``stream`` has caught up or failed: the process is ready once all have."""
        if not stream.settled:
            stream.settled = True
            self._settled_count += 1
            if self._settled_count >= self.total:
                self.settled.set()


PONG = json.dumps({"type": "pong"})


async def _subscriber(spec: SubscriberSpec, index: int, tally: _Tally) -> None:
    if spec.transport == "sse":
        await _sse_subscriber(spec, index, tally)
        return
    from websockets.asyncio.client import connect
    from websockets.typing import Subprotocol

    url, variables, missed = spec.assign(index)
    stream = _Stream(missed)
    subscribed = False
    try:
        async with connect(
            url,
            subprotocols=[Subprotocol("graphql-transport-ws")],
            compression=None,
            max_size=None,
            open_timeout=spec.connect_timeout,
            ping_interval=None,
            close_timeout=5,
        ) as ws:
            extensions = (
                ws.response.headers.get("Sec-WebSocket-Extensions") if ws.response else None
            )
            if extensions:
                tally.deflate += "permessage-deflate" in extensions
                tally.extensions[extensions] += 1
            await subscribe(ws, spec.plan.token, variables)
            subscribed = True
            tally.subscribed += 1
            tally.check_caught_up(stream)
            while len(stream.live) + stream.live_errors < spec.mutations:
                raw = await ws.recv()
                now = time.time()
                message = json.loads(raw)
                if message["type"] in {"error", "complete"}:
                    raise RuntimeError(f"subscription ended with {message['type']}: {raw!r}")
                if message["type"] == "ping":  # the protocol's keep-alive: answer at once
                    await ws.send(PONG)
                    continue
                if message["type"] == "next":
                    _take(stream, tally, message["payload"], raw, now)
    except Exception as exc:
        tally.errors[f"{type(exc).__name__}: {exc}"[:160]] += 1
        if subscribed:
            tally.failed_late += 1
        else:
            tally.failed_early += 1
        tally.settle(stream)
    finally:
        tally.replayed.add(stream.missed, stream.replayed)


async def _sse_subscriber(spec: SubscriberSpec, index: int, tally: _Tally) -> None:
    """One subscriber over Server-Sent Events: a POST with ``Accept: text/event-stream``
    on a plain asyncio connection (HTTP/1.1, the answer chunked), its ``next`` events
    counted as the websocket subscriber counts its frames."""
    url, variables, missed = spec.assign(index)
    stream = _Stream(missed)
    subscribed = False
    address = url.split("//", 1)[1].split("/", 1)[0]
    host, port = address.rsplit(":", 1)
    body = json.dumps({"query": SUBSCRIBE, "variables": variables}).encode()
    request = (
        f"POST /graphql HTTP/1.1\r\nHost: {address}\r\n"
        f"Authorization: Bearer {spec.plan.token}\r\nAccept: text/event-stream\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(spec.connect_timeout):
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"refused: {head.splitlines()[0]!r}")
        chunked = b"transfer-encoding: chunked" in head.lower()
        subscribed = True
        tally.subscribed += 1
        tally.check_caught_up(stream)
        buffered = b""
        while len(stream.live) + stream.live_errors < spec.mutations:
            chunk = await _next_chunk(reader, chunked)
            now = time.time()
            buffered += chunk
            while (end := buffered.find(b"\n\n")) >= 0:
                block, buffered = buffered[:end], buffered[end + 2 :]
                event, data = _event(block)
                if event == "complete":
                    raise RuntimeError(f"subscription completed: {block!r}")
                if event == "next":
                    _take(stream, tally, json.loads(data), data, now)
    except Exception as exc:
        tally.errors[f"{type(exc).__name__}: {exc}"[:160]] += 1
        if subscribed:
            tally.failed_late += 1
        else:
            tally.failed_early += 1
        tally.settle(stream)
    finally:
        tally.replayed.add(stream.missed, stream.replayed)
        if writer is not None:
            writer.close()


async def _next_chunk(reader: asyncio.StreamReader, chunked: bool) -> bytes:
    if not chunked:
        data = await reader.read(65536)
    else:
        size = int((await reader.readline()).split(b";")[0], 16)
        data = (await reader.readexactly(size + 2))[:-2] if size else b""
    if not data:
        raise RuntimeError("the event stream ended")
    return data


def _event(block: bytes) -> tuple[str, str]:
    """A Server-Sent Event's name and data (a comment, the heartbeat, has no name)."""
    event, data = "", []
    for line in block.decode().splitlines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    return event, "\n".join(data)


def _take(
    stream: _Stream, tally: _Tally, payload: dict[str, Any], raw: str | bytes, now: float
) -> None:
    """Count one ``next`` frame: a replayed history event, a live one or an error."""
    if payload.get("errors") or not payload.get("data"):
        tally.error_frames += 1
        errors = payload.get("errors") or [{}]
        tally.errors[f"next with errors: {errors[0].get('message')}"[:160]] += 1
        if stream.caught_up:
            stream.live_errors += 1
        else:
            stream.replay_errors += 1
            tally.check_caught_up(stream)
        return
    event = payload["data"]["queueEvents"]
    if event["kind"] != EVENT_KIND:
        return
    entity_id = event["entityId"]
    if entity_id in tally.history:
        stream.replayed.append(entity_id)
        tally.check_caught_up(stream)
        return
    if entity_id in stream.live:
        tally.duplicates += 1
        return
    stream.live.add(entity_id)
    tally.arrivals.setdefault(entity_id, []).append(now)
    if tally.sample is None:
        tally.sample = raw if isinstance(raw, str) else raw.decode()


async def _run_subscribers(spec: SubscriberSpec, pipe: Connection) -> None:
    tally = _Tally(total=spec.count, history=frozenset(spec.plan.history))
    tasks: list[asyncio.Task[None]] = []
    for index in range(spec.first, spec.first + spec.count):
        tasks.append(asyncio.create_task(_subscriber(spec, index, tally)))
        await asyncio.sleep(spec.connect_interval)  # do not storm the accept queue, unless asked
    budget = spec.connect_timeout + (spec.catch_up_timeout if spec.plan.history else 0)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(tally.settled.wait(), budget)
    _quiet_collector()
    pipe.send(
        Ready(
            subscribed=tally.subscribed,
            caught_up=tally.caught_up,
            failed=tally.failed_early,
            deflate=tally.deflate,
            extensions=tally.extensions,
            started=tally.started,
            last_caught_up=tally.last_caught_up,
        )
    )
    # The parent says when the last mutation has been answered.
    await asyncio.get_running_loop().run_in_executor(None, pipe.recv)
    _, pending = await asyncio.wait(tasks, timeout=spec.drain_timeout)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    pipe.send(
        Received(
            arrivals=tally.arrivals,
            failed=tally.failed_early + tally.failed_late,
            timed_out=len(pending),
            duplicates=tally.duplicates,
            error_frames=tally.error_frames,
            errors=tally.errors,
            sample=tally.sample,
            replayed=tally.replayed,
        )
    )


def _quiet_collector() -> None:
    """Keep the client's garbage collector from pausing it while it times frames.

    With 500 sockets in a client process, each full collection took 55-140 ms (measured
    with ``gc.callbacks``), a pause in which frames wait and then arrive late, whichever
    server sent them; one such pause moved a run's p99 by half. The connections made so
    far are frozen out of collections and the young generation is collected less often,
    as ``signoff serve`` does for itself.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def raise_open_files() -> None:
    """Raise this process's open-files limit (and its children's, which inherit it) from the
    usual 1,024, which 10,000 subscribers' sockets exceed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES if hard == resource.RLIM_INFINITY else min(OPEN_FILES, hard)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def client_process(pipe: Connection) -> None:
    """Run subscribers for each spec the parent sends, until it sends ``stop``."""
    raise_open_files()
    while True:
        command: Any = pipe.recv()
        if command == "stop":
            return
        asyncio.run(_run_subscribers(command, pipe))


# --- servers ------------------------------------------------------------------


class Target(Protocol):
    name: str
    processes: int  # server processes, all serving the same data

    def start(self, port: int) -> subprocess.Popen[bytes]: ...

    async def prepare(self, bases: list[str], resume_cursors: int) -> Plan:
        """The subscribers' token and subscription variables (and, with ``resume_cursors``,
        the history they resume in), set up through the first server; every server is
        ready for the subscribers once it returns."""
        ...

    async def mutate(self, http: httpx.AsyncClient, i: int) -> str:
        """Send one mutation; return the id of the entity its event is about."""
        ...


# A server's environment with no live bound per token or actor (``SIGNOFF_LIVE_MAX_*``).
NO_LIVE_BOUNDS = {
    f"SIGNOFF_LIVE_MAX_{bound}_PER_{per}": "0"
    for bound in ("SOCKETS", "SUBSCRIPTIONS")
    for per in ("TOKEN", "ACTOR")
}


async def subscribe(ws: Any, token: str, variables: dict[str, Any]) -> None:
    """graphql-transport-ws on ``ws``: authenticate with ``token``, then subscribe (id "1")."""
    init = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
    await ws.send(json.dumps(init))
    ack = json.loads(await ws.recv())
    if ack.get("type") != "connection_ack":
        raise RuntimeError(f"expected connection_ack, got {ack.get('type')}")
    payload = {"query": SUBSCRIBE, "variables": variables}
    await ws.send(json.dumps({"type": "subscribe", "id": "1", "payload": payload}))


class SignoffTarget:
    name = "Signoff"
    live_bounds_off = True

    def __init__(self, database_url: str | None, redis_url: str | None, servers: int) -> None:
        self.processes = servers
        # A fresh SQLite file in a directory of its own, removed by ``close``.
        self.scratch = None if database_url else tempfile.mkdtemp(prefix="signoff-fanout-")
        self.database_url = database_url or f"sqlite+aiosqlite:///{self.scratch}/bench.db"
        self.redis_url = redis_url
        self.admin = ""
        self.queue_id = ""

    def start(self, port: int) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "SIGNOFF_DATABASE_URL": self.database_url,
            "SIGNOFF_LOG_LEVEL": "warning",
            "SIGNOFF_SUBSCRIBER_BUFFER": "1024",
        }
        if self.live_bounds_off:
            # Every subscriber of a run shares one reviewer token: no per-token bound.
            env.update(NO_LIVE_BOUNDS)
        if self.redis_url:
            env.update(
                SIGNOFF_REDIS_URL=self.redis_url,
                SIGNOFF_EVENTS_CHANNEL=f"signoff:bench:{os.getpid()}",
            )
        command = [sys.executable, "-m", "signoff", "serve", "--host", HOST, "--port", str(port)]
        return subprocess.Popen(command, env=env)

    def close(self) -> None:
        """Remove the SQLite file (and its journal) this run made, if it made one."""
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)

    async def prepare(self, bases: list[str], resume_cursors: int) -> Plan:
        async with httpx.AsyncClient(base_url=bases[0], timeout=60) as http:
            reviewer = await self._queue_and_tokens(http)
            await asyncio.sleep(1.5)  # the relay stamps the setup's own events
            cursor = await _graphql(http, reviewer, "{ changeFeedCursor }", {})
            plan = Plan(reviewer, {"q": self.queue_id, "a": cursor["changeFeedCursor"]})
            if resume_cursors:
                plan = await self._history(http, plan, resume_cursors)
        await asyncio.gather(*(warm_pool(base, reviewer) for base in bases))
        return plan

    async def _queue_and_tokens(self, http: httpx.AsyncClient) -> str:
        """Make the admin token, the run's queue and its reviewer; return the reviewer's token."""
        from signoff.database import create_engine, create_sessionmaker
        from signoff.models import Role
        from signoff.resolvers.access.actors import create_token
        from signoff.resolvers.core.work import UnitOfWork

        engine = create_engine(self.database_url)
        sessionmaker = create_sessionmaker(engine)
        # Unique per run, and so is the reviewer: a run on a database that keeps earlier
        # runs' rows (PostgreSQL) never meets their queue, and a membership added for
        # another run's reviewer never makes this run's subscribers re-read theirs.
        slug = f"bench-{os.getpid()}-{time.time_ns() // 1_000_000}"
        try:
            async with sessionmaker() as session:
                token = await create_token(
                    work=UnitOfWork(session), name="bench-admin", role=Role.ADMIN
                )
                self.admin = token.token
            created = await _graphql(
                http,
                self.admin,
                'mutation($s: String!) { createQueue(input: {slug: $s, name: "Bench"}) { id } }',
                {"s": slug},
            )
            self.queue_id = created["createQueue"]["id"]
            async with sessionmaker() as session:
                reviewer = await create_token(
                    work=UnitOfWork(session),
                    name=f"{slug}-reviewer",
                    role=Role.REVIEWER,
                    queue_slugs=[slug],
                )
        finally:
            await engine.dispose()
        return reviewer.token

    async def _history(self, http: httpx.AsyncClient, plan: Plan, cursors: int) -> Plan:
        """Create ``HISTORY_PER_CURSOR`` x ``cursors`` tasks one at a time, reading the feed's
        cursor after each, and spread ``cursors`` resume points evenly over that history:
        the k-th resumes after the cursor read before task k x HISTORY_PER_CURSOR, so it
        misses everything from that task on (all of it for k = 0, the last two for the
        last k)."""
        length = HISTORY_PER_CURSOR * cursors
        history: list[str] = []
        after = [plan.variables["a"]]  # after[j]: the cursor after the first j tasks
        for i in range(length):
            history.append(await self._create_task(http, f"history {i}"))
            after.append(await _next_cursor(http, plan.token, after[-1]))
        starts = [k * length // cursors for k in range(cursors)]
        resumes = [Resume(after[j], j) for j in starts]
        return Plan(plan.token, plan.variables, history, resumes)

    async def mutate(self, http: httpx.AsyncClient, i: int) -> str:
        return await self._create_task(http, f"bench {i}")

    async def _create_task(self, http: httpx.AsyncClient, title: str) -> str:
        task = {"queueId": self.queue_id, "kind": "REVIEW", "title": title}
        data = await _graphql(http, self.admin, CREATE_TASK, {"i": task})
        entity_id: str = data["createTask"]["id"]
        return entity_id


class SignoffSseTarget(SignoffTarget):
    """Signoff again, its subscribers over Server-Sent Events (the same subscription, the
    same clients' code but for the transport), on a server of its own."""

    name = "Signoff SSE"
    transport = "sse"


class FloorTarget:
    name = "floor"
    processes = 1

    def start(self, port: int) -> subprocess.Popen[bytes]:
        command = [sys.executable, str(FLOOR_SCRIPT), "--host", HOST, "--port", str(port)]
        return subprocess.Popen(command)

    async def prepare(self, bases: list[str], resume_cursors: int) -> Plan:
        # No history: the floor's subscribers are the reference broadcast, resumed or not.
        return Plan("floor-token", {"q": "floor-queue", "a": "floor-cursor"})

    async def mutate(self, http: httpx.AsyncClient, i: int) -> str:
        response = await http.post("/mutate")
        response.raise_for_status()
        entity_id: str = response.json()["id"]
        return entity_id


async def _graphql(
    http: httpx.AsyncClient, token: str, query: str, variables: dict[str, Any]
) -> Any:
    response = await http.post(
        "/graphql",
        headers={"Authorization": f"Bearer {token}"},
        json={"query": query, "variables": variables},
    )
    body = response.json()
    if body.get("errors"):
        raise RuntimeError(f"GraphQL errors: {body['errors']}")
    return body["data"]


async def _next_cursor(http: httpx.AsyncClient, token: str, previous: str) -> str:
    """The feed's cursor once it has moved past ``previous``: the event of a mutation
    just answered is stamped in its transaction on SQLite, shortly after on PostgreSQL."""
    async with asyncio.timeout(CURSOR_TIMEOUT):
        while True:
            data = await _graphql(http, token, "{ changeFeedCursor }", {})
            cursor: str = data["changeFeedCursor"]
            if cursor != previous:
                return cursor
            await asyncio.sleep(0.005)


async def warm_pool(base: str, token: str) -> None:
    """Serve a burst of concurrent reads before the RSS baseline is taken.

    The database pool opens connections (on SQLite, each with its own thread and page
    cache) only when requests overlap. Without this, the burst of subscribes opens them
    and their memory is charged to the subscribers, although a server that has served
    any concurrent traffic already holds them.
    """
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        await asyncio.gather(
            *(_graphql(http, token, "{ queues { id name } }", {}) for _ in range(WARM_READS))
        )


@dataclass(frozen=True)
class Scrape:
    """What a side's servers export at ``/metrics`` (the floor exports nothing)."""

    live_subscribers: list[int] | None  # ``signoff_live_subscribers`` of each server
    executions: float | None  # a broadcast executions counter, summed over the servers


async def scrape(bases: list[str]) -> Scrape:
    """Read every server's ``/metrics``: its live subscribers, and the frames computed by
    its broadcast groups where it exports a ``signoff_*executions*`` counter."""
    live: list[int] = []
    executions: float | None = None
    async with httpx.AsyncClient(timeout=30) as http:
        for base in bases:
            response = await http.get(f"{base}/metrics")
            if response.status_code != 200:
                return Scrape(None, None)
            for name, value in _samples(response.text):
                if name == "signoff_live_subscribers":
                    live.append(int(value))
                elif EXECUTIONS.fullmatch(name):
                    executions = (executions or 0.0) + value
    return Scrape(live if len(live) == len(bases) else None, executions)


async def until_live(base: str, count: int, within: float, fewer: bool = False) -> None:
    """Until the server at ``base`` counts ``count`` live subscriptions (``fewer``: at most
    ``count``). A client's subscribe is not acknowledged, so only the server knows when a
    subscription is up. A ``/metrics`` read that times out or is dropped on a loaded
    server (its connection refused or closed unanswered) is tried again until ``within``
    is spent."""
    deadline = time.monotonic() + within
    live: list[int] | None = None
    while True:
        with contextlib.suppress(httpx.TransportError):
            live = (await scrape([base])).live_subscribers
        if live is not None and ((live[0] <= count) if fewer else (live[0] >= count)):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{live} subscriptions, not {count}, after {within} s")
        await asyncio.sleep(0.5)


def _samples(exposition: str) -> Iterator[tuple[str, float]]:
    """(name, value) of each sample in a Prometheus text exposition."""
    for line in exposition.splitlines():
        if line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            yield name, float(line.rsplit(" ", 1)[1])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, all threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_healthy(base: str, server: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"server exited with {server.returncode} while starting")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base}/healthz").status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"server at {base} not healthy after {timeout} s")


@dataclass(frozen=True)
class Server:
    base: str
    process: subprocess.Popen[bytes]

    @property
    def ws_url(self) -> str:
        return self.base.replace("http://", "ws://", 1) + "/graphql"


@contextlib.contextmanager
def serving(target: Target) -> Iterator[list[Server]]:
    """Start the target's processes (the first alone: it migrates the database) and stop
    every one of them on the way out."""
    servers: list[Server] = []
    try:
        _launch(target, 1, servers)
        _launch(target, target.processes - 1, servers)
        yield servers
    finally:
        for server in servers:
            stop_server(server.process)


def _launch(target: Target, count: int, servers: list[Server]) -> None:
    """Start ``count`` more processes, added to ``servers`` at once, and wait for them."""
    for _ in range(count):
        port = free_port()
        servers.append(Server(f"http://{HOST}:{port}", target.start(port)))
    for server in servers[len(servers) - count :]:
        wait_healthy(server.base, server.process)


def total_rss_kib(servers: list[Server]) -> int:
    return sum(rss_kib(server.process.pid) for server in servers)


def total_cpu_seconds(servers: list[Server]) -> float:
    return sum(cpu_seconds(server.process.pid) for server in servers)


def stop_server(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def receive(pipe: Connection, kind: type[T], timeout: float) -> T:
    if not pipe.poll(timeout):
        raise RuntimeError(f"no {kind.__name__} from a client process within {timeout:.0f} s")
    message = pipe.recv()
    if not isinstance(message, kind):
        raise RuntimeError(f"expected {kind.__name__} from a client process, got {message!r}")
    return message


# --- one measured side ----------------------------------------------------------


@dataclass
class Mutations:
    sent: dict[str, float]
    round_trips: list[float]
    first_sent: float
    last_answered: float


async def send_mutations(
    mutate: Callable[[httpx.AsyncClient, int], Awaitable[str]],
    base: str,
    count: int,
    rate: float,
) -> Mutations:
    sent: dict[str, float] = {}
    round_trips: list[float] = []
    first_sent = time.time()
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for i in range(count):
            started = time.monotonic()
            entity_id = await mutate(http, i)
            sent[entity_id] = time.time()
            round_trips.append(time.monotonic() - started)
            await asyncio.sleep(max(0.0, 1 / rate - (time.monotonic() - started)))
    return Mutations(sent, round_trips, first_sent, max(sent.values()))


@dataclass
class Side:
    name: str
    subscribers: int
    expected: int
    latencies_ms: list[float]
    frames_per_s: float
    rss_before_kib: int
    rss_subscribed_kib: int
    rss_end_kib: int
    cpu_s: float
    mutations: Mutations
    ready: list[Ready]
    received: list[Received]
    load_before: float
    load_after: float
    wall_s: float
    unknown: int
    every_id_complete: bool
    servers: int
    scraped: tuple[Scrape, Scrape]  # before the first mutation, after the drain

    @property
    def delivered(self) -> int:
        return len(self.latencies_ms)

    @property
    def failed_early(self) -> int:
        return sum(r.failed for r in self.ready)

    @property
    def failed_late(self) -> int:
        return sum(r.failed for r in self.received) - self.failed_early

    @property
    def timed_out(self) -> int:
        return sum(r.timed_out for r in self.received)

    @property
    def duplicates(self) -> int:
        return sum(r.duplicates for r in self.received)

    @property
    def error_frames(self) -> int:
        return sum(r.error_frames for r in self.received)

    @property
    def every_frame(self) -> bool:
        return (
            self.every_id_complete
            and self.delivered == self.expected
            and self.unknown == 0
            and self.duplicates == 0
            and self.error_frames == 0
            and self.failed_early + self.failed_late + self.timed_out == 0
        )

    @property
    def caught_up(self) -> int:
        return sum(r.caught_up for r in self.ready)

    @property
    def replayed(self) -> Replayed:
        total = Replayed()
        for result in self.received:
            total.merge(result.replayed)
        return total

    @property
    def every_replay(self) -> bool:
        return self.replayed.exact and self.caught_up == self.subscribers

    @property
    def storm_s(self) -> float:
        """From the first connection to the last subscriber caught up (or subscribed)."""
        ends = [r.last_caught_up for r in self.ready]
        if any(end is None for end in ends):
            return float("nan")
        return max(end for end in ends if end is not None) - min(r.started for r in self.ready)

    @property
    def executions_per_event(self) -> float | None:
        before, after = (scrape.executions for scrape in self.scraped)
        if before is None or after is None or not self.mutations.sent:
            return None
        return (after - before) / len(self.mutations.sent)

    @property
    def rss_per_idle_subscriber_kib(self) -> float:
        return (self.rss_subscribed_kib - self.rss_before_kib) / self.subscribers

    @property
    def mutations_per_s(self) -> float:
        span = self.mutations.last_answered - self.mutations.first_sent
        return len(self.mutations.sent) / span if span > 0 else float("nan")


def run_side(target: Target, pipes: list[Connection], per_worker: list[int], args: Any) -> Side:
    started = time.monotonic()
    with serving(target) as servers:
        bases = [server.base for server in servers]
        plan = asyncio.run(target.prepare(bases, args.resume_cursors))
        rss_before = total_rss_kib(servers)
        transport = getattr(target, "transport", "websocket")
        ready = connect_subscribers(target.name, pipes, per_worker, servers, plan, args, transport)
        time.sleep(args.settle)  # let the server register every subscription
        rss_subscribed = total_rss_kib(servers)
        scraped_before = asyncio.run(scrape(bases))
        load_before = os.getloadavg()[0]
        cpu_before = total_cpu_seconds(servers)
        mutations = asyncio.run(send_mutations(target.mutate, bases[0], args.mutations, args.rate))
        for pipe in pipes:
            pipe.send("drain")
        received = [receive(pipe, Received, args.drain_timeout + 60) for pipe in pipes]
        cpu = total_cpu_seconds(servers) - cpu_before
        load_after = os.getloadavg()[0]
        rss_end = total_rss_kib(servers)
        scraped_after = asyncio.run(scrape(bases))

    subscribers = sum(per_worker)
    latencies, last_arrival, unknown = live_latencies(received, mutations)
    every_id_complete = all(
        sum(len(result.arrivals.get(entity_id, [])) for result in received) == subscribers
        for entity_id in mutations.sent
    )
    span = last_arrival - mutations.first_sent
    return Side(
        name=target.name,
        subscribers=subscribers,
        expected=subscribers * args.mutations,
        latencies_ms=latencies,
        frames_per_s=len(latencies) / span if span > 0 else 0.0,
        rss_before_kib=rss_before,
        rss_subscribed_kib=rss_subscribed,
        rss_end_kib=rss_end,
        cpu_s=cpu,
        mutations=mutations,
        ready=ready,
        received=received,
        load_before=load_before,
        load_after=load_after,
        wall_s=time.monotonic() - started,
        unknown=unknown,
        every_id_complete=every_id_complete,
        servers=len(servers),
        scraped=(scraped_before, scraped_after),
    )


def connect_subscribers(
    name: str,
    pipes: list[Connection],
    per_worker: list[int],
    servers: list[Server],
    plan: Plan,
    args: Any,
    transport: str = "websocket",
) -> list[Ready]:
    """Have the client processes connect, subscribe and (resume mode) catch up."""
    # Resume mode is a reconnect storm: every client process connects all at once.
    interval = 0.0 if args.resume_cursors else args.connect_interval
    catch_up = args.catch_up_timeout if plan.history else 0.0
    for worker, (pipe, count) in enumerate(zip(pipes, per_worker, strict=True)):
        spec = SubscriberSpec(
            urls=[server.ws_url for server in servers],
            first=sum(per_worker[:worker]),
            plan=plan,
            count=count,
            mutations=args.mutations,
            connect_interval=interval,
            connect_timeout=args.connect_timeout,
            catch_up_timeout=catch_up,
            drain_timeout=args.drain_timeout,
            transport=transport,
        )
        pipe.send(spec)
    budget = args.connect_timeout + catch_up + max(per_worker) * interval + 30
    ready = [receive(pipe, Ready, budget) for pipe in pipes]
    caught_up = f"{sum(r.caught_up for r in ready)} caught up, " if plan.history else ""
    print(
        f"{name}: {sum(r.subscribed for r in ready)} subscribed, {caught_up}"
        f"{sum(r.failed for r in ready)} failed; settling {args.settle} s",
        file=sys.stderr,
    )
    return ready


def live_latencies(
    received: list[Received], mutations: Mutations
) -> tuple[list[float], float, int]:
    """Every live frame's latency in ms, the last arrival, and frames of no mutation sent."""
    latencies: list[float] = []
    last_arrival = mutations.first_sent
    unknown = 0
    for result in received:
        for entity_id, times in result.arrivals.items():
            if entity_id not in mutations.sent:
                unknown += len(times)
                continue
            sent_at = mutations.sent[entity_id]
            latencies.extend((t - sent_at) * 1000 for t in times)
            last_arrival = max(last_arrival, *times)
    return latencies, last_arrival, unknown


# --- report ---------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _row(label: str, cells: list[str], ratio: str = "") -> str:
    return f"{label:<34}" + "".join(f"{cell:>22}" for cell in cells) + f"{ratio:>16}"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def _latency(q: float) -> Callable[[Side], float]:
    return lambda side: percentile(side.latencies_ms, q)


# (label, value, format, whether to print Signoff / floor)
NUMBERS: list[tuple[str, Callable[[Side], float], str, bool]] = [
    ("latency p50 ms", _latency(0.50), ",.1f", False),
    ("latency p95 ms", _latency(0.95), ",.1f", False),
    ("latency p99 ms", _latency(0.99), ",.1f", True),
    ("latency max ms", lambda s: max(s.latencies_ms, default=float("nan")), ",.1f", False),
    ("frames/s", lambda s: s.frames_per_s, ",.0f", True),
    ("server RSS before connect MiB", lambda s: s.rss_before_kib / 1024, ",.1f", False),
    ("server RSS subscribed, idle MiB", lambda s: s.rss_subscribed_kib / 1024, ",.1f", False),
    ("server RSS per idle subscriber KiB", lambda s: s.rss_per_idle_subscriber_kib, ",.1f", True),
    ("server RSS at end MiB", lambda s: s.rss_end_kib / 1024, ",.1f", False),
    ("server CPU s, mutations to drain", lambda s: s.cpu_s, ",.2f", True),
    (
        "mutation round trip p50 ms",
        lambda s: percentile(s.mutations.round_trips, 0.5) * 1e3,
        ",.1f",
        False,
    ),
    ("mutation round trip max ms", lambda s: max(s.mutations.round_trips) * 1e3, ",.1f", False),
    ("mutations/s achieved", lambda s: s.mutations_per_s, ",.1f", False),
    ("load average (1 min) before", lambda s: s.load_before, ".2f", False),
    ("load average (1 min) after", lambda s: s.load_after, ".2f", False),
    ("wall time of this side s", lambda s: s.wall_s, ",.1f", False),
]
COUNTS: list[tuple[str, Callable[[Side], str]]] = [
    ("frames delivered", lambda s: f"{s.delivered:,} of {s.expected:,}"),
    ("every frame delivered", lambda s: "yes" if s.every_frame else "NO"),
    ("failed to subscribe", lambda s: str(s.failed_early)),
    ("failed / timed out after subscribing", lambda s: f"{s.failed_late} / {s.timed_out}"),
    ("duplicate / unknown frames", lambda s: f"{s.duplicates} / {s.unknown}"),
    ("next frames carrying errors", lambda s: str(s.error_frames)),
    (
        "permessage-deflate negotiated",
        lambda s: f"{sum(r.deflate for r in s.ready)} of {s.subscribers}",
    ),
]

# Resume mode only; the floor's subscribers resume nothing.
RESUME_COUNTS: list[tuple[str, Callable[[Side], str]]] = [
    ("caught up before mutating", lambda s: f"{s.caught_up:,} of {s.subscribers:,}"),
    ("replayed frames", lambda s: f"{s.replayed.frames:,} of {s.replayed.expected:,}"),
    ("every replay exact", lambda s: "yes" if s.every_replay else "NO"),
    ("replay duplicates / gaps", lambda s: f"{s.replayed.duplicates} / {s.replayed.gaps}"),
    (
        "replay extra / out of order",
        lambda s: f"{s.replayed.extra} / {s.replayed.disordered}",
    ),
]
RESUME_NUMBERS: list[tuple[str, Callable[[Side], float], str, bool]] = [
    ("storm: connect to caught up s", lambda s: s.storm_s, ",.1f", True),
]


def report(sides: list[Side], args: Any, database: str) -> None:
    hub = "redis" if args.redis_url else "memory"
    print(
        f"\nsubscribers={args.subscribers} mutations={args.mutations} rate={args.rate}/s "
        f"workers={args.workers} database={database} hub={hub} cpus={os.cpu_count()}"
    )
    if args.servers > 1:
        print(
            f"Signoff: {args.servers} server processes, subscribers round robin, mutations "
            "to the first; its RSS and CPU are their sums (the floor is one process)"
        )
    resume = args.resume_cursors > 0
    if resume:
        history = HISTORY_PER_CURSOR * args.resume_cursors
        print(
            f"resume: {args.resume_cursors} cursors over {history} history events, all "
            "connecting at once (the floor: the same storm, nothing to resume); latency is "
            "of live frames only; RSS subscribed is read once caught up"
        )
    names = [side.name for side in sides]
    both = names[:2] == ["Signoff", "floor"]
    print(_row("", names, "Signoff/floor" if both else ""))
    for label, text in COUNTS + (RESUME_COUNTS if resume else []):
        print(_row(label, [text(side) for side in sides]))
    for label, value, fmt, with_ratio in NUMBERS + (RESUME_NUMBERS if resume else []):
        values = [value(side) for side in sides]
        ratio = _ratio(values[0], values[1]) if both and with_ratio else ""
        print(_row(label, [format(v, fmt) for v in values], ratio))
    executions = [side.executions_per_event for side in sides]
    if any(value is not None for value in executions):
        cells = ["-" if value is None else f"{value:,.1f}" for value in executions]
        print(_row("broadcast executions per live event", cells))
    for side in sides:
        live = side.scraped[0].live_subscribers
        if side.servers > 1 and live is not None:
            print(f"{side.name}: live subscribers per server: {' / '.join(map(str, live))}")
    if both:
        signoff, floor = sides[:2]
        p99 = _ratio(percentile(signoff.latencies_ms, 0.99), percentile(floor.latencies_ms, 0.99))
        rate = _ratio(signoff.frames_per_s, floor.frames_per_s)
        print(f"\nSignoff p99 / floor p99 = {p99}; Signoff frames/s / floor frames/s = {rate}")
    by_name = {side.name: side for side in sides}
    if "Signoff" in by_name and "Signoff SSE" in by_name:
        ws, sse = by_name["Signoff"], by_name["Signoff SSE"]
        p99 = _ratio(percentile(sse.latencies_ms, 0.99), percentile(ws.latencies_ms, 0.99))
        rss = _ratio(sse.rss_per_idle_subscriber_kib, ws.rss_per_idle_subscriber_kib)
        print(
            f"Signoff SSE p99 / websocket p99 = {p99}; "
            f"SSE RSS per idle subscriber / websocket's = {rss}"
        )
    for side in sides:
        errors: Counter[str] = Counter()
        extensions: Counter[str] = Counter()
        for ready in side.ready:
            extensions.update(ready.extensions)
        for received in side.received:  # includes the errors reported when ready
            errors.update(received.errors)
        sample = next((r.sample for r in side.received if r.sample), None)
        print(f"\n{side.name}: sample frame ({len(sample or '')} bytes): {sample}")
        print(f"{side.name}: Sec-WebSocket-Extensions answered: {dict(extensions) or 'none'}")
        for error, count in errors.most_common(5):
            print(f"{side.name}: {count} x {error}")


# --- main -----------------------------------------------------------------------


def _stop_clients(processes: list[BaseProcess], pipes: list[Connection]) -> None:
    for pipe in pipes:
        with contextlib.suppress(OSError, ValueError):
            pipe.send("stop")
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():
            process.terminate()
            process.join(timeout=5)
        if process.is_alive():
            process.kill()
            process.join()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--mutations", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0, help="mutations per second")
    parser.add_argument("--workers", type=int, default=2, help="client processes")
    parser.add_argument(
        "--connect-interval",
        type=float,
        default=0.004,
        help="seconds between two connections of one client process",
    )
    parser.add_argument("--connect-timeout", type=float, default=60.0)
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=300.0,
        help="seconds the subscribers get after the last mutation is answered",
    )
    parser.add_argument("--settle", type=float, default=2.0, help="seconds before mutating")
    parser.add_argument("--only", choices=["signoff", "floor", "sse"], help="measure one side only")
    parser.add_argument(
        "--no-sse", action="store_true", help="leave out the Server-Sent Events side"
    )
    parser.add_argument("--database-url", help="default: a fresh SQLite file")
    parser.add_argument("--redis-url", help="default: the embedded in-memory hub")
    parser.add_argument(
        "--resume-cursors",
        type=int,
        default=0,
        help="resume storm: Signoff's subscribers resume after this many distinct cursors "
        "spread over a history of twice as many events (0: all subscribe from the head)",
    )
    parser.add_argument(
        "--catch-up-timeout",
        type=float,
        default=300.0,
        help="resume mode: seconds the subscribers get to receive their replays",
    )
    parser.add_argument(
        "--servers",
        type=int,
        default=1,
        help="signoff serve processes on one database and Redis (more than 1 needs both URLs)",
    )
    args = parser.parse_args()
    if args.servers < 1:
        parser.error("--servers must be at least 1")
    if args.resume_cursors < 0:
        parser.error("--resume-cursors must be 0 or more")
    if args.servers > 1 and not (args.database_url and args.redis_url):
        parser.error("--servers above 1 needs --database-url (PostgreSQL) and --redis-url")
    raise_open_files()
    # A plain SIGTERM must still run the finally blocks that stop the children.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    signoff = SignoffTarget(args.database_url, args.redis_url, args.servers)
    sse = SignoffSseTarget(args.database_url, args.redis_url, args.servers)
    targets: list[Target] = [signoff, FloorTarget()]
    if not args.no_sse:
        targets.append(sse)
    if args.only:
        targets = [t for t in targets if t.name.lower().replace("signoff sse", "sse") == args.only]
    per_worker = [args.subscribers // args.workers] * args.workers
    per_worker[0] += args.subscribers - sum(per_worker)

    started = time.monotonic()
    ctx = multiprocessing.get_context("spawn")
    processes: list[BaseProcess] = []
    pipes: list[Connection] = []
    sides: list[Side] = []
    try:
        for _ in range(args.workers):
            parent, child = ctx.Pipe()
            process = ctx.Process(target=client_process, args=(child,), daemon=True)
            process.start()
            processes.append(process)
            pipes.append(parent)
        for target in targets:
            print(f"measuring {target.name} ...", file=sys.stderr)
            sides.append(run_side(target, pipes, per_worker, args))
    finally:
        _stop_clients(processes, pipes)
        signoff.close()
        sse.close()

    database = "postgresql" if "postgres" in signoff.database_url else "sqlite"
    report(sides, args, database)
    print(f"\ntotal wall time {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
