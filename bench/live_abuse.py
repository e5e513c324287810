"""Hostile subscribers: another reviewer's event latency and the server's memory while one
token tries to hold as many sockets and subscriptions as it can, none of them reading.

One ``signoff serve`` (a fresh SQLite file, embedded hub; with ``--database-url`` and
``--redis-url``, ``--servers`` of them on PostgreSQL + Redis, the abuser spread over all).
A **victim** reviewer follows its queue on the first server (``queueEvents { cursor
snapshot }``) and reads every frame. Each round:

1. **quiet**: ``--events`` tasks with an ``--payload-kb`` context are created, paced
   (``--rate`` a second); the victim's latency is from just before each ``createTask``
   to its frame's arrival;
2. **abuse**: the abuser's one token opens ``--sockets`` websockets (as fast as it can,
   over the servers), each asking for ``--subscriptions`` subscriptions of the same
   queue, and never reads (a 4 KiB receive buffer); ``--abuse-settle`` seconds later,
   the same events again, with the victim's latency, and how many sockets the servers
   took or refused;
3. **after**: the abusers close; the servers' RSS once it settles.

Printed per round: the victim's p50/p99 quiet and under abuse (goal: p99 under abuse
at most 2x quiet), sockets and subscriptions held, and each server's RSS at start, under
abuse and after (goal: after within 10 % of start, no growth across rounds).

    .venv/bin/python bench/live_abuse.py
    .venv/bin/python bench/live_abuse.py --servers 2 \\
        --database-url postgresql://postgres@127.0.0.1:5432/postgres --redis-url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
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


@dataclass
class Abuse:
    sockets: list[ClientConnection] = field(default_factory=list)
    refused_sockets: int = 0
    subscriptions: int = 0
    refused_subscriptions: int = 0


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def percentile(values: list[float], fraction: float) -> float:
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
    """Reads every frame of its queue and notes when each arrived."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.arrivals: list[float] = []
        self.arrived = asyncio.Condition()
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for raw in self.ws:
                if json.loads(raw).get("type") == "next":
                    self.arrivals.append(time.monotonic())
                    async with self.arrived:
                        self.arrived.notify_all()

    async def until(self, count: int, within: float) -> bool:
        """Whether ``count`` frames have come within ``within`` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within), self.arrived:
                await self.arrived.wait_for(lambda: len(self.arrivals) >= count)
        return len(self.arrivals) >= count


async def events(
    http: httpx.AsyncClient, admin: str, queue_id: str, victim: Victim, args: argparse.Namespace
) -> list[float]:
    """Create ``--events`` tasks, paced; the victim's latency of each, in ms."""
    padding = os.urandom(args.payload_kb * 384).hex()  # incompressible, payload_kb KiB
    seen = len(victim.arrivals)
    latencies = []
    for i in range(args.events):
        sent = time.monotonic()
        task = {"queueId": queue_id, "kind": "REVIEW", "title": f"t{i}", "context": {"p": padding}}
        await graphql(http, admin, CREATE_TASK, {"i": task})
        if await victim.until(seen + i + 1, 30):
            latencies.append((victim.arrivals[seen + i] - sent) * 1000)
        await asyncio.sleep(max(0.0, 1 / args.rate - (time.monotonic() - sent)))
    return latencies


async def open_abuse(
    ws_urls: list[str], token: str, queue_id: str, args: argparse.Namespace
) -> Abuse:
    abuse = Abuse()

    async def one(index: int) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        url = ws_urls[index % len(ws_urls)]
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        try:
            sock.connect((HOST, port))
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
    return abuse


async def run_round(
    number: int,
    servers: list[str],
    pids: list[int],
    target: AbusedTarget,
    abuser: str,
    args: argparse.Namespace,
) -> None:
    ws_urls = [base.replace("http://", "ws://") + "/graphql" for base in servers]
    async with (
        httpx.AsyncClient(base_url=servers[0], timeout=60) as http,
        connect(ws_urls[0], subprotocols=[TRANSPORT_WS], max_size=None) as ws,
    ):
        victim_token = target.victim
        assert await init(ws, victim_token)
        subscribe = {
            "id": "v",
            "type": "subscribe",
            "payload": {"query": SUBSCRIBE, "variables": {"q": target.queue_id}},
        }
        await ws.send(json.dumps(subscribe))
        victim = Victim(ws)
        await asyncio.sleep(0.5)
        start_rss = [rss_mib(pid) for pid in pids]
        quiet = await events(http, target.admin, target.queue_id, victim, args)
        abuse = await open_abuse(ws_urls, abuser, target.queue_id, args)
        await asyncio.sleep(args.abuse_settle)
        loud = await events(http, target.admin, target.queue_id, victim, args)
        abuse_rss = [rss_mib(pid) for pid in pids]
        for socket_ in abuse.sockets:
            with contextlib.suppress(Exception):
                socket_.transport.abort()
        await asyncio.sleep(args.settle)
        after_rss = [rss_mib(pid) for pid in pids]
        victim.reader.cancel()
    quiet_p99, loud_p99 = percentile(quiet, 0.99), percentile(loud, 0.99)
    print(
        f"round {number}: victim p50/p99 quiet {percentile(quiet, 0.5):.1f}/{quiet_p99:.1f} ms, "
        f"under abuse {percentile(loud, 0.5):.1f}/{loud_p99:.1f} ms (x{loud_p99 / quiet_p99:.2f}); "
        f"abuser sockets held {len(abuse.sockets)}, refused {abuse.refused_sockets}; "
        f"victim frames {len(quiet)}+{len(loud)} of {2 * args.events}"
    )
    for i in range(len(pids)):
        change = (after_rss[i] - start_rss[i]) / start_rss[i] * 100
        print(
            f"  server {i}: RSS start {start_rss[i]:.0f} MiB, under abuse {abuse_rss[i]:.0f} MiB, "
            f"after {after_rss[i]:.0f} MiB ({change:+.1f} %)"
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
        await asyncio.sleep(1.5)
        for number in range(1, args.rounds + 1):
            await run_round(number, bases, [p.pid for p in processes], target, abuser, args)
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
        "--abuse-settle", type=float, default=1.0, help="seconds between the abuse and its events"
    )
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
