"""Agents each waiting on its own proposal: memory per waiting agent, server CPU per event,
and what one event costs to reach its one waiter against a plain dictionary lookup-and-send,
in one run; ``--repeat`` runs the load again and prints the server's RSS each time.

**Signoff**: one ``signoff serve`` (a fresh SQLite file, or a fresh PostgreSQL database on
the server of ``--database-url``; ``--redis-url`` for the Redis hub; no live bounds per
token, as in ``bench/fanout.py``). ``--tokens`` agent tokens propose ``--agents`` proposals
(plus the controls) to a human-approved target, round robin. Each of ``--agents`` waiters,
spread over ``--workers`` client processes, is the Python client's own ``Proposal.wait``
(``clients/python``): a websocket of its own following ``proposalEvents`` of its proposal
from the feed's cursor. ``--consoles`` console subscribers (``queueEvents`` of the
proposals' queue, plain websockets) may join them on the same process. Once the server
counts every subscription, a reviewer rejects ``--events`` waited proposals one at a
time at up to ``--rate`` per second, alternating, in blocks of ``BLOCK``, with as many
control proposals nobody waits on. The waiters of the first ``--events`` decided
proposals return from ``wait`` and close their sockets, as an agent does; those of the
next ``--events`` (the **kept** waiters) open the same subscription ``wait`` opens, read
its frame and keep the socket open until the repetition ends, so that what the server
spends ending a subscription and closing its socket is not counted in their events.

**floor** (``--no-floor`` leaves it out): a plain Starlette websocket endpoint on the same
uvicorn stack (``websockets-sansio``, no per-message deflate) holding every socket in a
dict keyed by its proposal id; ``POST /event/{id}`` answers, then sends one pre-encoded
frame to the socket of that id. The same client processes open as many plain websockets,
one per proposal; its events alternate with controls the same way (ids nobody holds), its
kept waiters keep their sockets the same way. It runs as ``signoff serve`` does: no
uvicorn pings (Signoff keeps its sockets alive itself), the garbage collector tuned.

Definitions:

- **memory per waiting agent**: (server VmRSS with every waiter subscribed, ``--settle``
  seconds after the last) - (VmRSS before the first connected), / agents.
- **latency**: a waiter's ``wait`` returning (the floor: its frame arriving) minus the
  decision's (the POST's) response received; p50 / p99 nearest rank.
- **server CPU per event**: user + system CPU of the server (every thread, ended ones
  too) over the waited blocks, / events: the decision (HTTP, GraphQL, its transaction)
  and its delivery. Read in nanoseconds from the kernel's CPU clock of the server's
  process (``clock_getcpuclockid``), the same sum as ``/proc``'s ``utime + stime``, which
  counts it in 10 ms ticks (±0.1 ms per figure over 100 events); the floor is read the
  same way in the same run. ``±`` is one standard error from the blocks: a delivery's
  (either side's) from each waited (or kept) block less the control block of its round,
  the floor's whole event's from its blocks. The per-event figure of every block is
  printed, and the ratio again from the medians of the blocks (of their rounds'
  differences), which leave out a block that something else on the machine fell in: a
  burst of another process raised the floor's blocks to 3-5x for a second, all kinds
  alike, and a whole event's figure, with no control subtracted, keeps such a burst.
  Signoff's periodic sweeps (``SIGNOFF_SWEEP_INTERVAL_SECONDS``,
  ``SIGNOFF_RECONCILE_INTERVAL_SECONDS``) run at its start only and its keep-alive pings
  (``SIGNOFF_WS_PING_SECONDS``) are not due in the run: they are no event's cost, and
  one in a block moved it by up to 10 ms per event.
- **delivery CPU per event**: the same less the CPU per control event (a decision nobody
  waits on, the floor's POST for an id nobody holds): what it costs the server that an
  event reaches its one waiter and the waiter goes (Signoff: routing, the frame's
  execution and encoding, the send, then the end of the subscription and the closing of
  its socket; the floor: the lookup, the send and the closing).
- **delivery alone**: the same for the kept waiters' events: the event reaching its
  waiter, nothing of the teardown (whose cost is the difference of the two).
- **ratio**: Signoff's delivery CPU per event / the floor's, for both kinds of waiter:
  each side's event less its control, so that what the event's arrival costs (Signoff's
  decision, the floor's POST) and what it costs the process to wake for it leave both
  figures alike, and what is compared is the event reaching its waiter (the floor's: the
  lookup and the send of one pre-encoded frame, and for a waiter that goes, its socket's
  close). The ratio against the floor's whole event, which this bench used to report, is
  printed after it: that charged the floor, not Signoff, for receiving its event and for
  waking from idle for it, a cost that on a virtual machine whose idle CPUs halt grows
  the quieter the machine is, so that the old ratio moved with the machine's load more
  than with either side's delivery.
- **repetitions** (``--repeat`` R): the waiters (and consoles) connect, the events are
  sent, everyone disconnects, and the server's RSS is read before, at its peak (sampled
  every 50 ms), and ``--settle`` seconds after the server has ended the last subscription
  (a loaded server may take seconds after the clients to close thousands of sockets);
  each repetition waits on proposals still pending.

    .venv/bin/python bench/waiters.py --agents 10000 --events 100
    .venv/bin/python bench/waiters.py --agents 10000 --events 100 --repeat 3 --consoles 2500 \\
        --database-url postgresql://postgres@127.0.0.1:5432/postgres \\
        --redis-url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "python"))

from delivery import TOKENS, free_port, fresh_database, viewer
from fanout import (
    NO_LIVE_BOUNDS,
    cpu_seconds,
    raise_open_files,
    rss_kib,
    stop_server,
    until_live,
    wait_healthy,
)

HOST = "127.0.0.1"
BLOCK = 5  # events in a row of one kind (waited, kept, control) between two CPU readings
PROPOSE = """mutation($i: ProposeActionInput!) { proposeAction(input: $i) {
  proposal { ...ProposalFields } } }"""
DECIDE = """mutation($i: DecideProposalInput!) { decideProposal(input: $i) {
  proposal { id state } } }"""
CONSOLE = "subscription($q: ID) { queueEvents(queueId: $q) { cursor kind entityId } }"
FLOOR_SCRIPT = Path(__file__).with_name("waiters_floor.py")


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU of a process, all its threads (ended ones too), in nanoseconds:
    the kernel's CPU clock of ``pid`` (``clock_getcpuclockid``), the same sum ``/proc``'s
    ``utime + stime`` report in 10 ms ticks; ``/proc`` where that clock cannot be read."""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | 2) / 1e9  # CPUCLOCK_SCHED, whole process
    except OSError:
        return cpu_seconds(pid)


# --- the world ----------------------------------------------------------------------


@dataclass
class World:
    url: str
    queue_id: str
    target_id: str
    reviewer: str
    agents: list[str]
    # (token, proposal fields as the client reads them), not yet decided
    pending: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


async def seed(url: str, tokens: int) -> World:
    from signoff.config import Settings, load_sealer, normalise_database_url
    from signoff.database import create_engine, create_sessionmaker
    from signoff.migrate import migrate
    from signoff.models import ApprovalMode, Role
    from signoff.resolvers.approval.queues import create_queue
    from signoff.resolvers.core.work import Services, WorkMaker
    from signoff.resolvers.targets.targets import register_target

    settings = Settings(database_url=normalise_database_url(url))
    engine = create_engine(settings.database_url)
    await migrate(engine)
    work = WorkMaker(create_sessionmaker(engine), Services(sealer=load_sealer(settings)))
    admin = await viewer(work, Role.ADMIN, "bench-admin")
    async with work() as unit:
        queue = await create_queue(work=unit, viewer=admin, slug="bench", name="Bench")
    async with work() as unit:
        registered = await register_target(
            work=unit,
            viewer=admin,
            name="bench",
            input_schema={"type": "object"},
            approval_mode=ApprovalMode.HUMAN,
            queue_id=queue.id,
        )
    agents = []
    for n in range(tokens):
        await viewer(work, Role.AGENT, f"bench-agent-{n}")
        agents.append(TOKENS[f"bench-agent-{n}"])
    await viewer(work, Role.REVIEWER, "bench-reviewer", ["bench"])
    await engine.dispose()
    return World(url, queue.id, registered.target.id, TOKENS["bench-reviewer"], agents)


async def graphql(http: httpx.AsyncClient, token: str, query: str, variables: Any) -> Any:
    response = await http.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {token}"},
    )
    body = response.json()
    if body.get("errors"):
        raise RuntimeError(body["errors"])
    return body["data"]


async def propose_all(base: str, world: World, count: int, in_flight: int = 16) -> None:
    """``count`` proposals, round robin over the agents' tokens."""
    from signoff_client.generated.fragments import ProposalFields

    fragment = _fragment_text(ProposalFields)
    numbers = iter(range(count))

    async def one_at_a_time(http: httpx.AsyncClient) -> None:
        for n in numbers:
            token = world.agents[n % len(world.agents)]
            given = {
                "targetId": world.target_id,
                "actionCode": "bench.wait",
                "payload": {"n": n},
                "operationKey": uuid.uuid4().hex,
            }
            data = await graphql(http, token, PROPOSE + fragment, {"i": given})
            world.pending.append((token, data["proposeAction"]["proposal"]))

    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        await asyncio.gather(*(one_at_a_time(http) for _ in range(in_flight)))


def _fragment_text(model: Any) -> str:
    """The client's ``ProposalFields`` fragment, as its generated operations send it."""
    from signoff_client.generated import client as generated

    source = Path(generated.__file__).read_text()
    start = source.index("fragment ProposalFields")
    depth, end = 0, start
    for end in range(source.index("{", start), len(source)):
        depth += {"{": 1, "}": -1}.get(source[end], 0)
        if depth == 0:
            break
    return "\n" + source[start : end + 1].replace('\\"', '"')


# --- client processes ----------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """What one client process runs in one repetition."""

    side: str  # "signoff" or "floor"
    base: str
    cursor: str  # Signoff: the feed's cursor the waiters follow from
    waiters: list[tuple[str, dict[str, Any]]]  # (token, proposal fields)
    kept: frozenset[str]  # the proposals whose waiters keep their sockets after the frame
    consoles: int
    console_token: str
    queue_id: str
    timeout: float


@dataclass
class Outcomes:
    arrived: dict[str, float]  # proposal id -> when its wait returned (its frame arrived)
    failed: int
    errors: dict[str, int]
    console_frames: int


async def _wait_signoff(load: Load, client: Any, state: dict[str, Any]) -> None:
    from signoff_client.generated.fragments import ProposalFields
    from signoff_client.proposals import Proposal

    proposal = Proposal(client, ProposalFields.model_validate(state), load.cursor)
    await proposal.wait()


async def _hold_signoff(load: Load, client: Any, state: dict[str, Any], hold: Hold) -> None:
    """The subscription ``Proposal.wait`` opens, its socket kept open after the frame."""
    async with contextlib.aclosing(
        client.api.proposal_events(proposal_id=state["id"], after=load.cursor)
    ) as frames:
        await anext(frames)  # the proposal's decision: nothing else happens to it
        await hold.arrived(state["id"])


async def _wait_floor(load: Load, proposal_id: str, hold: Hold | None) -> None:
    from websockets.asyncio.client import connect

    url = load.base.replace("http://", "ws://", 1) + f"/wait/{proposal_id}"
    async with connect(url, compression=None, max_size=None, ping_interval=None) as ws:
        await ws.recv()
        if hold is not None:
            await hold.arrived(proposal_id)


@dataclass
class Hold:
    """Where the kept waiters note their frame's arrival, then wait for the end."""

    outcomes: Outcomes
    stop: asyncio.Event
    _reached: dict[str, asyncio.Future[None]] = field(default_factory=dict)

    async def arrived(self, proposal_id: str) -> None:
        self.outcomes.arrived[proposal_id] = time.time()
        self._future(proposal_id).set_result(None)
        await self.stop.wait()

    def reached(self, proposal_id: str, task: asyncio.Future[None]) -> asyncio.Future[None]:
        """Done once the waiter of ``proposal_id`` has its frame, or ``task`` ended."""
        future = self._future(proposal_id)

        def settle(_: object) -> None:
            if not future.done():
                future.set_result(None)

        task.add_done_callback(settle)
        return future

    def _future(self, proposal_id: str) -> asyncio.Future[None]:
        if proposal_id not in self._reached:
            self._reached[proposal_id] = asyncio.get_running_loop().create_future()
        return self._reached[proposal_id]


async def _console(load: Load, counter: list[int], stop: asyncio.Event) -> None:
    from websockets.asyncio.client import connect
    from websockets.typing import Subprotocol

    url = load.base.replace("http://", "ws://", 1) + "/graphql"
    async with connect(
        url,
        subprotocols=[Subprotocol("graphql-transport-ws")],
        compression=None,
        ping_interval=None,
    ) as ws:
        init = {"authorization": f"Bearer {load.console_token}"}
        await ws.send(json.dumps({"type": "connection_init", "payload": init}))
        await ws.recv()
        payload = {"query": CONSOLE, "variables": {"q": load.queue_id}}
        await ws.send(json.dumps({"type": "subscribe", "id": "1", "payload": payload}))
        reading = asyncio.ensure_future(_count_frames(ws, counter))
        await stop.wait()
        reading.cancel()


async def _count_frames(ws: Any, counter: list[int]) -> None:
    async for raw in ws:
        message = json.loads(raw)
        if message.get("type") == "ping":
            await ws.send('{"type":"pong"}')
        elif message.get("type") == "next":
            counter[0] += 1


async def _run_load(load: Load, pipe: Connection) -> None:
    from signoff_client.client import AsyncSignoff

    clients = {}
    if load.side == "signoff":
        for token in {token for token, _ in load.waiters}:
            clients[token] = AsyncSignoff(load.base, token, timeout=120)
    outcomes = Outcomes({}, 0, {}, 0)
    stop = asyncio.Event()
    counter = [0]
    consoles = [asyncio.ensure_future(_console(load, counter, stop)) for _ in range(load.consoles)]

    hold = Hold(outcomes, stop)

    async def one(token: str, state: dict[str, Any]) -> None:
        kept = state["id"] in load.kept
        try:
            if load.side == "floor":
                await _wait_floor(load, state["id"], hold if kept else None)
            elif kept:
                await _hold_signoff(load, clients[token], state, hold)
            else:
                await _wait_signoff(load, clients[token], state)
            if not kept:
                outcomes.arrived[state["id"]] = time.time()
        except Exception as exc:
            outcomes.failed += 1
            key = f"{type(exc).__name__}: {exc}"[:160]
            outcomes.errors[key] = outcomes.errors.get(key, 0) + 1

    waiters = {}
    for token, state in load.waiters:
        waiters[state["id"]] = asyncio.ensure_future(one(token, state))
        await asyncio.sleep(0.002)  # do not storm the accept queue
    pipe.send("connected")
    # Once every event is sent, the parent names the proposals decided: their waiters get
    # the timeout to return, the others are stopped.
    decided = await asyncio.get_running_loop().run_in_executor(None, pipe.recv)
    mine = [
        hold.reached(i, waiters[i]) if i in load.kept else waiters[i]
        for i in decided
        if i in waiters
    ]
    if mine:
        await asyncio.wait(mine, timeout=load.timeout)
    await asyncio.sleep(0.5)  # a moment for frames of anything else (there should be none)
    stop.set()
    for task in waiters.values():
        task.cancel()
    await asyncio.gather(*waiters.values(), *consoles, return_exceptions=True)
    for client in clients.values():
        await client.aclose()
    outcomes.console_frames = counter[0]
    pipe.send(outcomes)


def client_process(pipe: Connection) -> None:
    raise_open_files()
    while True:
        command: Any = pipe.recv()
        if command == "stop":
            return
        asyncio.run(_run_load(command, pipe))


# --- one side ---------------------------------------------------------------------


class PeakRss:
    """The highest VmRSS of a process, sampled every 50 ms in a thread."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = rss_kib(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            with contextlib.suppress(OSError, RuntimeError):
                self.peak = max(self.peak, rss_kib(self.pid))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


@dataclass
class Repetition:
    rss_before: int
    rss_subscribed: int
    rss_peak: int
    rss_after: int
    latencies_ms: list[float]
    waited_cpu_s: float
    kept_cpu_s: float
    control_cpu_s: float
    rounds: dict[str, list[float]]  # kind -> CPU per event of each of its blocks, in turn
    events: int
    delivered: int
    failed: int
    errors: dict[str, int]
    console_frames: int

    def per_event_ms(self, cpu: float) -> float:
        return cpu / self.events * 1000 if self.events else float("nan")


async def feed_cursor(base: str, token: str) -> str:
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        data = await graphql(http, token, "{ changeFeedCursor }", {})
    cursor: str = data["changeFeedCursor"]
    return cursor


async def send_events(
    base: str,
    side: str,
    world: World,
    waited: list[dict[str, Any]],
    kept: list[dict[str, Any]],
    rate: float,
) -> tuple[dict[str, float], dict[str, float], dict[str, list[float]]]:
    """Decide (POST) the waited proposals, the kept ones and as many controls, alternating
    blocks; returns when each waited or kept one was answered, and the server CPU of each
    kind."""
    controls = [state for _, state in world.pending[: len(waited)]]
    del world.pending[: len(waited)]
    answered: dict[str, float] = {}
    cpu = {"waited": 0.0, "kept": 0.0, "control": 0.0}
    rounds: dict[str, list[float]] = {"waited": [], "kept": [], "control": []}
    pid = SERVER_PIDS[0]
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for start in range(0, len(waited), BLOCK):
            for kind, batch in (
                ("waited", waited[start : start + BLOCK]),
                ("kept", kept[start : start + BLOCK]),
                ("control", controls[start : start + BLOCK]),
            ):
                before = process_cpu_seconds(pid)
                for state in batch:
                    began = time.monotonic()
                    await _event(http, side, world, state)
                    if kind != "control":
                        answered[state["id"]] = time.time()
                    await asyncio.sleep(max(0.0, 1 / rate - (time.monotonic() - began)))
                await asyncio.sleep(0.2)  # the block's frames leave before the reading
                used = process_cpu_seconds(pid) - before
                cpu[kind] += used
                rounds[kind].append(used / len(batch) if batch else 0.0)
    return answered, cpu, rounds


async def _event(http: httpx.AsyncClient, side: str, world: World, state: dict[str, Any]) -> None:
    if side == "floor":
        (await http.post(f"/event/{state['id']}")).raise_for_status()
        return
    given = {
        "proposalId": state["id"],
        "decision": "REJECTED",
        "payloadDigest": state["payloadDigest"],
    }
    await graphql(http, world.reviewer, DECIDE, {"i": given})


SERVER_PIDS: list[int] = []


def run_repetition(
    side: str, base: str, pid: int, world: World, pipes: list[Connection], args: Any
) -> Repetition:
    count = args.agents
    waiting, world.pending = world.pending[:count], world.pending[count:]
    waited = [state for _, state in waiting[: args.events]]
    kept = [state for _, state in waiting[args.events : 2 * args.events]]
    kept_ids = frozenset(state["id"] for state in kept)
    rss_before = rss_kib(pid)
    peak = PeakRss(pid)
    cursor = asyncio.run(feed_cursor(base, world.reviewer)) if side == "signoff" else ""
    consoles = args.consoles if side == "signoff" else 0
    for worker, pipe in enumerate(pipes):
        mine = waiting[worker :: len(pipes)]
        share = consoles // len(pipes) + (worker < consoles % len(pipes))
        pipe.send(
            Load(
                side,
                base,
                cursor,
                mine,
                kept_ids,
                share,
                world.reviewer,
                world.queue_id,
                args.timeout,
            )
        )
    for pipe in pipes:
        if not pipe.poll(args.timeout + 300):
            raise RuntimeError("a client process did not connect its waiters")
        pipe.recv()
    if side == "signoff":
        asyncio.run(until_live(base, count + consoles, args.timeout))
    time.sleep(args.settle)
    rss_subscribed = rss_kib(pid)
    answered, cpu, rounds = asyncio.run(send_events(base, side, world, waited, kept, args.rate))
    for pipe in pipes:
        pipe.send(list(answered))
    outcomes = []
    for pipe in pipes:
        if not pipe.poll(args.timeout + 300):
            raise RuntimeError("a client process did not report")
        outcomes.append(pipe.recv())
    # The undecided proposals stay pending: the next repetition waits on them again.
    world.pending = waiting[2 * args.events :] + world.pending
    if side == "signoff":  # the clients are gone once the server has ended every subscription
        asyncio.run(until_live(base, 0, args.timeout, fewer=True))
    time.sleep(args.settle)
    rss_after = rss_kib(pid)
    arrived = {k: v for o in outcomes for k, v in o.arrived.items()}
    latencies = [(arrived[pid_] - t) * 1000 for pid_, t in answered.items() if pid_ in arrived]
    errors: dict[str, int] = {}
    for outcome in outcomes:
        for key, n in outcome.errors.items():
            errors[key] = errors.get(key, 0) + n
    return Repetition(
        rss_before=rss_before,
        rss_subscribed=rss_subscribed,
        rss_peak=peak.stop(),
        rss_after=rss_after,
        latencies_ms=latencies,
        waited_cpu_s=cpu["waited"],
        kept_cpu_s=cpu["kept"],
        control_cpu_s=cpu["control"],
        rounds=rounds,
        events=len(waited),
        delivered=len(latencies),
        failed=sum(o.failed for o in outcomes),
        errors=errors,
        console_frames=sum(o.console_frames for o in outcomes),
    )


@contextlib.contextmanager
def server(command: list[str], env: dict[str, str]) -> Iterator[tuple[str, int]]:
    port = free_port()
    process = subprocess.Popen([*command, "--host", HOST, "--port", str(port)], env=env)
    base = f"http://{HOST}:{port}"
    try:
        wait_healthy(base, process)
        SERVER_PIDS[:] = [process.pid]
        yield base, process.pid
    finally:
        stop_server(process)


def signoff_env(world: World, args: Any) -> dict[str, str]:
    env = {
        **os.environ,
        "SIGNOFF_DATABASE_URL": world.url,
        "SIGNOFF_LOG_LEVEL": "warning",
        "SIGNOFF_RATE_LIMIT": "0",
    }
    # Every waiter of a token shares its bounds: none per token or actor, as fanout.py.
    env.update(NO_LIVE_BOUNDS)
    # The periodic sweeps run once at the start, not again in the run: no event pays for
    # them, and one landing in a block moved its kind's figure by up to 10 ms per event.
    env.update(SIGNOFF_SWEEP_INTERVAL_SECONDS="86400", SIGNOFF_RECONCILE_INTERVAL_SECONDS="86400")
    # Keep-alive pings armed as ever (the same timer per socket) but not due in the run:
    # the waiters connect within seconds, so every 15 s their pings came as one burst.
    env.update(SIGNOFF_WS_PING_SECONDS="3600")
    if args.redis_url:
        env.update(
            SIGNOFF_REDIS_URL=args.redis_url,
            SIGNOFF_EVENTS_CHANNEL=f"signoff:waiters:{os.getpid()}",
        )
    return env


def run_signoff(world: World, pipes: list[Connection], args: Any) -> list[Repetition]:
    command = [sys.executable, "-m", "signoff", "serve"]
    with server(command, signoff_env(world, args)) as (base, pid):
        needed = args.agents + 3 * args.events * args.repeat
        started = time.monotonic()
        asyncio.run(propose_all(base, world, needed))
        print(f"Signoff: {needed} proposals in {time.monotonic() - started:.0f} s", file=sys.stderr)
        repetitions = []
        for n in range(args.repeat):
            repetitions.append(run_repetition("signoff", base, pid, world, pipes, args))
            print(f"Signoff: repetition {n + 1} done", file=sys.stderr)
        return repetitions


def run_floor(pipes: list[Connection], args: Any) -> list[Repetition]:
    command = [sys.executable, str(FLOOR_SCRIPT)]
    ids = [{"id": str(uuid.uuid4())} for _ in range(args.agents + 3 * args.events * args.repeat)]
    world = World("", "", "", "", [], [("", state) for state in ids])
    with server(command, dict(os.environ)) as (base, pid):
        return [run_repetition("floor", base, pid, world, pipes, args) for _ in range(args.repeat)]


# --- report ---------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def differences(rep: Repetition, kind: str) -> list[float]:
    """CPU per event of each block of ``kind`` less the control block of its round, s."""
    return [b - c for b, c in zip(rep.rounds[kind], rep.rounds["control"], strict=True)]


def spread(rep: Repetition, kind: str, *, own: bool = False) -> float:
    """The standard error of a per-event figure from its blocks, in ms: of each block less
    the control block of its round (a delivery), or with ``own`` of the blocks themselves
    (the floor's own figure)."""
    blocks = rep.rounds[kind] if own else differences(rep, kind)
    if len(blocks) < 2:
        return float("nan")
    error: float = statistics.stdev(blocks) / len(blocks) ** 0.5 * 1000
    return error


def report(sides: dict[str, list[Repetition]], args: Any) -> None:
    print(
        f"\nagents={args.agents} tokens={args.tokens} events={args.events} rate={args.rate}/s "
        f"consoles={args.consoles} workers={args.workers} repeat={args.repeat} "
        f"database={'postgresql' if args.database_url else 'sqlite'} "
        f"hub={'redis' if args.redis_url else 'memory'} cpus={os.cpu_count()}"
    )
    for name, reps in sides.items():
        for n, rep in enumerate(reps, 1):
            per_agent = (rep.rss_subscribed - rep.rss_before) / args.agents
            waited = rep.per_event_ms(rep.waited_cpu_s)
            kept = rep.per_event_ms(rep.kept_cpu_s)
            control = rep.per_event_ms(rep.control_cpu_s)
            print(
                f"{name} #{n}: delivered {rep.delivered} of {2 * rep.events}, failed "
                f"{rep.failed}; latency p50 {percentile(rep.latencies_ms, 0.5):.1f} ms p99 "
                f"{percentile(rep.latencies_ms, 0.99):.1f} ms; memory per waiting agent "
                f"{per_agent:.1f} KiB; server CPU per event {waited:.3f} ms (kept waiters "
                f"{kept:.3f}), per control {control:.3f} ms, delivery {waited - control:.3f} "
                f"± {spread(rep, 'waited'):.3f} ms, delivery alone {kept - control:.3f} "
                f"± {spread(rep, 'kept'):.3f} ms"
                + (f"; console frames {rep.console_frames:,}" if rep.console_frames else "")
            )
            print(
                f"{name} #{n}: RSS before {rep.rss_before / 1024:.1f} MiB, subscribed "
                f"{rep.rss_subscribed / 1024:.1f}, peak {rep.rss_peak / 1024:.1f}, after "
                f"{rep.rss_after / 1024:.1f} MiB"
            )
            print(
                f"{name} #{n}: CPU per event of each block, ms: "
                + "; ".join(
                    f"{kind} " + " ".join(f"{cpu * 1000:.2f}" for cpu in blocks)
                    for kind, blocks in rep.rounds.items()
                )
            )
            for error, count in sorted(rep.errors.items(), key=lambda e: -e[1])[:3]:
                print(f"{name} #{n}: {count} x {error}")
    if "Signoff" in sides and "floor" in sides:
        signoff, floor = sides["Signoff"], sides["floor"]
        for label, kind in (("delivery", "waited"), ("delivery alone (kept waiters)", "kept")):
            delivery = _median_delivery(signoff, kind)
            floor_delivery = _median_delivery(floor, kind)
            ratio = delivery / floor_delivery
            print(
                f"Signoff {label} CPU per event {delivery:.3f} ms / floor {label} "
                f"{floor_delivery:.3f} ms = {ratio:.2f}x ± "
                f"{_ratio_error(ratio, signoff[0], floor[0], kind, delivery, floor_delivery):.2f} "
                "(each side's event less its control; medians over repetitions; ± one "
                "standard error from the blocks)"
            )
            paired = statistics.median(differences(signoff[0], kind))
            floor_paired = statistics.median(differences(floor[0], kind))
            print(
                f"  the same from the medians of the blocks (first repetition; a block that "
                f"something else on the machine fell in left out): {paired * 1000:.3f} ms / "
                f"{floor_paired * 1000:.3f} ms = {paired / floor_paired:.2f}x"
            )
            floor_whole = statistics.median(
                r.per_event_ms(getattr(r, f"{kind}_cpu_s")) for r in floor
            )
            whole_error = _ratio_error(
                delivery / floor_whole, signoff[0], floor[0], kind, delivery, floor_whole, own=True
            )
            print(
                f"  against the floor's whole event (its POST and the process's waking "
                f"included), as read before: {delivery:.3f} / {floor_whole:.3f} ms = "
                f"{delivery / floor_whole:.2f}x ± {whole_error:.2f}"
            )


def _median_delivery(reps: list[Repetition], kind: str) -> float:
    """A side's CPU per event of ``kind`` less its control's, in ms, median over repetitions."""
    return statistics.median(
        r.per_event_ms(getattr(r, f"{kind}_cpu_s")) - r.per_event_ms(r.control_cpu_s) for r in reps
    )


def _ratio_error(
    ratio: float,
    signoff: Repetition,
    floor: Repetition,
    kind: str,
    delivery: float,
    floor_cpu: float,
    *,
    own: bool = False,
) -> float:
    """The ratio's standard error from its two figures' (first repetition's blocks);
    ``own``: the floor's figure is its whole event, not a difference."""
    relative = (spread(signoff, kind) / delivery) ** 2 + (
        spread(floor, kind, own=own) / floor_cpu
    ) ** 2
    error: float = ratio * relative**0.5
    return error


def _stop_clients(processes: list[BaseProcess], pipes: list[Connection]) -> None:
    for pipe in pipes:
        with contextlib.suppress(OSError, ValueError):
            pipe.send("stop")
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
            process.join()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--agents", type=int, default=10_000, help="waiting agents")
    parser.add_argument("--tokens", type=int, default=100, help="agent tokens, round robin")
    parser.add_argument("--events", type=int, default=100, help="waited proposals decided")
    parser.add_argument("--rate", type=float, default=20.0, help="events per second")
    parser.add_argument("--consoles", type=int, default=0, help="queueEvents subscribers too")
    parser.add_argument("--workers", type=int, default=4, help="client processes")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--no-floor", action="store_true")
    parser.add_argument("--only-floor", action="store_true")
    parser.add_argument("--database-url", help="a PostgreSQL server (default: SQLite)")
    parser.add_argument("--redis-url", help="default: the embedded in-memory hub")
    args = parser.parse_args()
    if args.agents < 2 * args.events:
        parser.error("--agents must be at least twice --events (waited and kept waiters)")
    raise_open_files()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ctx = multiprocessing.get_context("spawn")
    processes: list[BaseProcess] = []
    pipes: list[Connection] = []
    sides: dict[str, list[Repetition]] = {}
    try:
        for _ in range(args.workers):
            parent, child = ctx.Pipe()
            process = ctx.Process(target=client_process, args=(child,), daemon=True)
            process.start()
            processes.append(process)
            pipes.append(parent)
        if not args.only_floor:
            sides["Signoff"] = asyncio.run(_signoff_side(pipes, args))
        if not args.no_floor:
            print("measuring the floor ...", file=sys.stderr)
            sides["floor"] = run_floor(pipes, args)
    finally:
        _stop_clients(processes, pipes)
    report(sides, args)


async def _signoff_side(pipes: list[Connection], args: Any) -> list[Repetition]:
    async with fresh_database(args.database_url) as url:
        world = await seed(url, args.tokens)
        return await asyncio.to_thread(run_signoff, world, pipes, args)


if __name__ == "__main__":
    main()
