"""Hostile subscribers: another reviewer's event latency and the servers' memory while one
token tries to hold as many sockets and subscriptions as it can, none of them reading.

One ``signoff serve`` (a fresh SQLite file, embedded hub; with ``--database-url`` and
``--redis-url``, ``--servers`` of them on PostgreSQL + Redis, the abuser spread over all).
A **victim** reviewer follows its queue on the first server (``queueEvents { cursor
snapshot }``) and reads every frame. Each round:

1. **quiet**: ``--events`` tasks with a ``--payload-kb`` context are created, paced
   (``--rate`` a second); the victim's latency is from just before each ``createTask``
   to its frame's arrival;
2. **storm**: the abuser, a client process of its own (``--abuser-nice``: at that
   niceness), opens ``--sockets`` websockets
   with its one token, as fast as it can, over the servers, each sending
   ``connection_init`` and ``--subscriptions`` subscriptions of the same queue, and
   never reads (a 4 KiB receive buffer). The victim's events go on at the same rate from
   the moment the storm starts: those created in its first ``--storm-seconds`` are the
   **first second** figure;
3. **settled**: ``--abuse-settle`` seconds after the storm has opened everything, the
   same ``--events`` again;
4. **after**: the abuser closes everything; the servers' RSS ``--settle`` seconds later.

Printed per round and over all rounds: the victim's p50/p99 quiet, in the storm's first
second and settled, each with its ratio to quiet (goal: p99 at most 2x quiet), the
sockets the abuser held and was refused, and each server's RSS at the round's start, its
peak (sampled every 50 ms) and after (goal: after within 10 % of start, no growth
across rounds).

    .venv/bin/python bench/live_abuse.py
    .venv/bin/python bench/live_abuse.py --servers 2 \\
        --database-url postgresql://postgres@127.0.0.1:5432/signoff_bench_abuse \\
        --redis-url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from fanout import SignoffTarget, free_port, wait_healthy
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

HOST = "127.0.0.1"
SUBSCRIBE = "subscription($q: ID) { queueEvents(queueId: $q) { cursor snapshot } }"
CREATE_TASK = "mutation($i: CreateTaskInput!) { createTask(input: $i) { id } }"
TRANSPORT_WS: Any = "graphql-transport-ws"
RSS_SAMPLE_SECONDS = 0.05


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def loop_cpu_ms(pid: int) -> float:
    """The CPU time of ``pid``'s main thread (its event loop), in ms, to the nanosecond."""
    with open(f"/proc/{pid}/task/{pid}/schedstat") as schedstat:
        return int(schedstat.read().split()[0]) / 1e6


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def graphql(http: httpx.AsyncClient, token: str, query: str, variables: Any) -> Any:
    answer = await http.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {token}"},
    )
    body = answer.json()
    if body.get("errors"):
        raise RuntimeError(body["errors"])
    return body["data"]


async def init(ws: ClientConnection, token: str) -> bool:
    message = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
    await ws.send(json.dumps(message))
    try:
        answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
    except (ConnectionClosed, TimeoutError):
        return False
    return bool(answer.get("type") == "connection_ack")


class Victim:
    """Reads every frame of its queue and notes when each arrived, and the CPU time of
    the server's event loop then."""

    def __init__(self, ws: ClientConnection, pid: int) -> None:
        self.ws = ws
        self.pid = pid
        self.arrivals: list[float] = []
        self.loop_cpu: list[float] = []
        self.arrived = asyncio.Condition()
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for raw in self.ws:
                if json.loads(raw).get("type") == "next":
                    self.arrivals.append(time.monotonic())
                    self.loop_cpu.append(loop_cpu_ms(self.pid))
                    async with self.arrived:
                        self.arrived.notify_all()

    async def until(self, count: int, within: float) -> bool:
        """Whether ``count`` frames have come within ``within`` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within), self.arrived:
                await self.arrived.wait_for(lambda: len(self.arrivals) >= count)
        return len(self.arrivals) >= count


class RssSampler:
    """Each server's highest RSS, sampled every ``RSS_SAMPLE_SECONDS`` while it runs."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.peaks = [rss_mib(pid) for pid in pids]
        self._task = asyncio.create_task(self._sample())

    async def _sample(self) -> None:
        while True:
            await asyncio.sleep(RSS_SAMPLE_SECONDS)
            self.peaks = [
                max(p, rss_mib(pid)) for p, pid in zip(self.peaks, self.pids, strict=True)
            ]

    def stop(self) -> list[float]:
        self._task.cancel()
        return self.peaks


async def events(
    http: httpx.AsyncClient,
    target: AbusedTarget,
    victim: Victim,
    args: argparse.Namespace,
    count: int,
    cpu: list[float] | None = None,
) -> list[float]:
    """Create ``count`` tasks, paced at ``--rate``; the victim's latency of each, in ms
    (and in ``cpu`` the server loop's CPU time from each ``createTask`` to its frame)."""
    padding = os.urandom(args.payload_kb * 384).hex()  # incompressible, payload_kb KiB
    seen = len(victim.arrivals)
    latencies = []
    for i in range(count):
        sent = time.monotonic()
        cpu_sent = loop_cpu_ms(victim.pid)
        task = {
            "queueId": target.queue_id,
            "kind": "REVIEW",
            "title": f"t{i}",
            "context": {"p": padding},
        }
        await graphql(http, target.admin, CREATE_TASK, {"i": task})
        if await victim.until(seen + i + 1, 30):
            latencies.append((victim.arrivals[seen + i] - sent) * 1000)
            if cpu is not None:
                cpu.append(victim.loop_cpu[seen + i] - cpu_sent)
        await asyncio.sleep(max(0.0, 1 / args.rate - (time.monotonic() - sent)))
    return latencies


# The abuser: a process of its own, so that its storm does not slow the victim's client.


@dataclass
class Abuse:
    sockets: list[ClientConnection] = field(default_factory=list)
    refused_sockets: int = 0
    opened_in: float = 0.0


async def open_abuse(
    ws_urls: list[str], token: str, queue_id: str, args: argparse.Namespace
) -> Abuse:
    abuse = Abuse()
    started = time.monotonic()

    async def one(index: int) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        url = ws_urls[index % len(ws_urls)]
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        try:
            await asyncio.get_running_loop().sock_connect(sock, (HOST, port))
            ws = await connect(url, subprotocols=[TRANSPORT_WS], sock=sock, max_queue=1)
        except (OSError, InvalidStatus):
            abuse.refused_sockets += 1
            return
        if not await init(ws, token):
            abuse.refused_sockets += 1
            await ws.close()
            return
        abuse.sockets.append(ws)
        for n in range(args.subscriptions):
            message = {
                "id": str(n),
                "type": "subscribe",
                "payload": {"query": SUBSCRIBE, "variables": {"q": queue_id}},
            }
            with contextlib.suppress(ConnectionClosed):
                await ws.send(json.dumps(message))

    await asyncio.gather(*(one(i) for i in range(args.sockets)))
    abuse.opened_in = time.monotonic() - started
    return abuse


async def abuser_main(args: argparse.Namespace) -> None:
    """On a line on stdin open the storm, report it on stdout, hold it until stdin closes,
    then drop it."""
    readline = functools.partial(
        asyncio.get_running_loop().run_in_executor, None, sys.stdin.readline
    )
    await readline()
    abuse = await open_abuse(args.ws_urls.split(","), args.abuser_token, args.queue_id, args)
    report = {
        "held": len(abuse.sockets),
        "refused": abuse.refused_sockets,
        "opened_in": abuse.opened_in,
    }
    print(json.dumps(report), flush=True)
    await readline()
    for ws in abuse.sockets:
        with contextlib.suppress(Exception):
            ws.transport.abort()


async def start_abuser(
    ws_urls: list[str], token: str, queue_id: str, args: argparse.Namespace
) -> asyncio.subprocess.Process:
    # ``--abuser-nice``: the abuser's client takes CPU only where the servers leave it, as
    # it would on a machine of its own.
    return await asyncio.create_subprocess_exec(
        *(("nice", "-n", str(args.abuser_nice)) if args.abuser_nice else ()),
        sys.executable,
        __file__,
        "--abuser",
        "--ws-urls",
        ",".join(ws_urls),
        "--abuser-token",
        token,
        "--queue-id",
        queue_id,
        "--sockets",
        str(args.sockets),
        "--subscriptions",
        str(args.subscriptions),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )


async def profile(pid: int, index: int, args: argparse.Namespace) -> asyncio.subprocess.Process:
    """py-spy (installed beside this Python) on one server through the quiet events and
    ``--profile-seconds`` of the storm, as collapsed stacks in ``<--profile>-server<i>.txt``
    (only the busy samples: the quiet events barely show)."""
    py_spy = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return await asyncio.create_subprocess_exec(
        *(
            py_spy,
            "record",
            "-p",
            str(pid),
            "-d",
            str(round(args.events / args.rate + args.profile_seconds)),
            "-r",
            "250",
        ),
        *("-f", "raw", "--nonblocking", "-o", f"{args.profile}-server{index}.txt"),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )


@dataclass
class Round:
    quiet: list[float]
    first: list[float]
    settled: list[float]
    quiet_cpu: list[float]
    first_cpu: list[float]
    start_rss: list[float]
    peak_rss: list[float]
    after_rss: list[float]
    abuse: dict[str, Any]


async def run_round(
    servers: list[str],
    pids: list[int],
    target: AbusedTarget,
    abuser: str,
    args: argparse.Namespace,
) -> Round:
    ws_urls = [base.replace("http://", "ws://") + "/graphql" for base in servers]
    async with (
        httpx.AsyncClient(base_url=servers[0], timeout=60) as http,
        connect(ws_urls[0], subprotocols=[TRANSPORT_WS], max_size=None) as ws,
    ):
        assert await init(ws, target.victim)
        subscribe = {
            "id": "v",
            "type": "subscribe",
            "payload": {"query": SUBSCRIBE, "variables": {"q": target.queue_id}},
        }
        await ws.send(json.dumps(subscribe))
        victim = Victim(ws, pids[0])
        await asyncio.sleep(0.5)
        start_rss = [rss_mib(pid) for pid in pids]
        sampler = RssSampler(pids)
        storm = await start_abuser(ws_urls, abuser, target.queue_id, args)
        assert storm.stdout is not None and storm.stdin is not None
        # Started before the quiet events: py-spy takes a while to attach.
        profilers = (
            [await profile(pid, i, args) for i, pid in enumerate(pids)] if args.profile else []
        )
        quiet_cpu: list[float] = []
        quiet = await events(http, target, victim, args, args.events, quiet_cpu)
        storm.stdin.write(b"go\n")
        await storm.stdin.drain()
        first_cpu: list[float] = []
        first = await events(
            http, target, victim, args, round(args.rate * args.storm_seconds), first_cpu
        )
        abuse = json.loads(await storm.stdout.readline())
        for profiler in profilers:
            await profiler.wait()
        await asyncio.sleep(args.abuse_settle)
        settled = await events(http, target, victim, args, args.events)
        storm.stdin.close()
        await storm.wait()
        await asyncio.sleep(args.settle)
        peak_rss = sampler.stop()
        after_rss = [rss_mib(pid) for pid in pids]
        victim.reader.cancel()
    return Round(quiet, first, settled, quiet_cpu, first_cpu, start_rss, peak_rss, after_rss, abuse)


def describe(label: str, quiet: list[float], first: list[float], settled: list[float]) -> str:
    quiet_p99 = percentile(quiet, 0.99)

    def part(name: str, values: list[float]) -> str:
        p99 = percentile(values, 0.99)
        return (
            f"{name} {percentile(values, 0.5):.1f}/{p99:.1f} ms (x{p99 / quiet_p99:.2f}, "
            f"n={len(values)})"
        )

    return (
        f"{label}: victim p50/p99 quiet {percentile(quiet, 0.5):.1f}/{quiet_p99:.1f} ms "
        f"(n={len(quiet)}), {part('storm first second', first)}, {part('settled', settled)}"
    )


def describe_cpu(quiet: list[float], first: list[float]) -> str:
    """The first server's loop CPU from each ``createTask`` to its frame (a busy shared
    machine lengthens latencies; it barely changes this)."""
    return (
        f"loop CPU per victim event p50/p99 quiet {percentile(quiet, 0.5):.1f}/"
        f"{percentile(quiet, 0.99):.1f} ms, storm first second {percentile(first, 0.5):.1f}/"
        f"{percentile(first, 0.99):.1f} ms; first second, event by event: "
        + " ".join(f"{x:.0f}" for x in first)
        + " ms"
    )


def report(number: int, result: Round) -> None:
    abuse = result.abuse
    print(describe(f"round {number}", result.quiet, result.first, result.settled))
    print(
        f"  abuser sockets held {abuse['held']}, refused {abuse['refused']}, "
        f"all opened in {abuse['opened_in']:.2f} s; the storm's first second, event by event: "
        + " ".join(f"{x:.0f}" for x in result.first)
        + " ms"
    )
    print("  " + describe_cpu(result.quiet_cpu, result.first_cpu))
    for i, start in enumerate(result.start_rss):
        change = (result.after_rss[i] - start) / start * 100
        print(
            f"  server {i}: RSS start {start:.0f} MiB, peak {result.peak_rss[i]:.0f} MiB, "
            f"after {result.after_rss[i]:.0f} MiB ({change:+.1f} %)"
        )


class AbusedTarget(SignoffTarget):
    """``signoff serve`` as the fan-out benchmark starts it, but with the live bounds of its
    settings (the fan-out's one token for every subscriber turns them off)."""

    victim = ""
    live_bounds_off = False


async def prepare(target: AbusedTarget, base: str) -> str:
    """The queue, the admin, the victim's token and the abuser's (both reviewers of it)."""
    from signoff.database import create_engine, create_sessionmaker
    from signoff.models import Role
    from signoff.resolvers.access.actors import create_token
    from signoff.resolvers.core.work import UnitOfWork

    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        target.victim = await target._queue_and_tokens(http)
    engine = create_engine(target.database_url)
    try:
        async with create_sessionmaker(engine)() as session:
            async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                queues = await graphql(http, target.admin, "{ queues { id slug } }", {})
            slug = next(q["slug"] for q in queues["queues"] if q["id"] == target.queue_id)
            abuser = await create_token(
                work=UnitOfWork(session),
                name=f"{slug}-abuser",
                role=Role.REVIEWER,
                queue_slugs=[slug],
            )
    finally:
        await engine.dispose()
    return abuser.token


async def main_async(args: argparse.Namespace) -> None:
    target = AbusedTarget(args.database_url, args.redis_url, args.servers)
    ports = [free_port() for _ in range(args.servers)]
    processes = [target.start(port) for port in ports]
    bases = [f"http://{HOST}:{port}" for port in ports]
    try:
        for base, process in zip(bases, processes, strict=True):
            wait_healthy(base, process)
        abuser = await prepare(target, bases[0])
        print(
            "servers:",
            ", ".join(f"{base} (pid {p.pid})" for base, p in zip(bases, processes, strict=True)),
            flush=True,
        )
        await asyncio.sleep(1.5)
        rounds = []
        for number in range(1, args.rounds + 1):
            rounds.append(await run_round(bases, [p.pid for p in processes], target, abuser, args))
            report(number, rounds[-1])
        print(
            describe(
                f"all {len(rounds)} rounds",
                [x for r in rounds for x in r.quiet],
                [x for r in rounds for x in r.first],
                [x for r in rounds for x in r.settled],
            )
        )
        print(
            "  "
            + describe_cpu(
                [x for r in rounds for x in r.quiet_cpu], [x for r in rounds for x in r.first_cpu]
            )
        )
        for i in range(args.servers):
            first, last = rounds[0].start_rss[i], rounds[-1].after_rss[i]
            peak = max(r.peak_rss[i] for r in rounds)
            print(
                f"  server {i}: RSS at the first start {first:.0f} MiB, peak {peak:.0f} MiB, "
                f"after the last round {last:.0f} MiB ({(last - first) / first * 100:+.1f} %)"
            )
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
        target.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url")
    parser.add_argument("--redis-url")
    parser.add_argument("--servers", type=int, default=1)
    parser.add_argument("--sockets", type=int, default=300)
    parser.add_argument("--subscriptions", type=int, default=100)
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--payload-kb", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument(
        "--storm-seconds",
        type=float,
        default=1.0,
        help="the victim's events created this long from the storm's start are its figure",
    )
    parser.add_argument(
        "--abuse-settle",
        type=float,
        default=1.0,
        help="seconds between the storm having opened everything and the settled events",
    )
    parser.add_argument(
        "--abuser-nice",
        type=int,
        default=0,
        help="run the abuser's client at this niceness (19: it barely competes for the CPU)",
    )
    parser.add_argument(
        "--profile",
        metavar="PREFIX",
        help="py-spy each server from the storm's start (pip install py-spy into the venv)",
    )
    parser.add_argument("--profile-seconds", type=int, default=3)
    # The abuser's own process (started by the benchmark).
    parser.add_argument("--abuser", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ws-urls", help=argparse.SUPPRESS)
    parser.add_argument("--abuser-token", help=argparse.SUPPRESS)
    parser.add_argument("--queue-id", help=argparse.SUPPRESS)
    args = parser.parse_args()
    asyncio.run(abuser_main(args) if args.abuser else main_async(args))


if __name__ == "__main__":
    main()
