"""Fan-out benchmark: one ``signoff serve`` process, K subscribers on one queue over
real websockets (graphql-transport-ws), M mutations.

Prints p50/p95/p99/max latency from each mutation's HTTP response to each
subscriber's frame for it, events delivered per second, and the server's resident
memory per connection. Subscribers run in ``--workers`` client processes so the
client side is not the bottleneck on its own.

    .venv/bin/python bench/fanout.py --subscribers 1000 --mutations 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx

SUBSCRIBE = (
    "subscription($q: ID, $a: String) "
    "{ queueEvents(queueId: $q, after: $a) { cursor kind entityId } }"
)
CREATE_TASK = "mutation($i: CreateTaskInput!) { createTask(input: $i) { id } }"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def _subscriber(
    url: str,
    token: str,
    queue_id: str,
    after: str,
    mutations: int,
    arrivals: dict[str, list[float]],
    ready: asyncio.Event,
    counter: list[int],
    total: int,
) -> None:
    from websockets.asyncio.client import connect

    async with connect(
        url,
        subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
        max_size=None,
        open_timeout=60,
        ping_interval=None,
    ) as ws:
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}})
        )
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        await ws.send(
            json.dumps(
                {
                    "type": "subscribe",
                    "id": "1",
                    "payload": {"query": SUBSCRIBE, "variables": {"q": queue_id, "a": after}},
                }
            )
        )
        counter[0] += 1
        if counter[0] == total:
            ready.set()
        received = 0
        while received < mutations:
            message = json.loads(await ws.recv())
            now = time.time()
            if message["type"] == "next":
                event = message["payload"]["data"]["queueEvents"]
                if event["kind"] == "task.created":
                    arrivals.setdefault(event["entityId"], []).append(now)
                    received += 1
            elif message["type"] in {"error", "complete"}:
                raise RuntimeError(f"subscription ended: {message}")


def _worker(
    interval: float,
    pipe: Connection,
    url: str,
    token: str,
    queue_id: str,
    after: str,
    count: int,
    mutations: int,
) -> None:
    async def run() -> dict[str, list[float]]:
        arrivals: dict[str, list[float]] = {}
        ready = asyncio.Event()
        counter = [0]
        tasks = []
        for _ in range(count):
            tasks.append(
                asyncio.create_task(
                    _subscriber(
                        url, token, queue_id, after, mutations, arrivals, ready, counter, count
                    )
                )
            )
            await asyncio.sleep(interval)  # do not storm the accept queue
        await ready.wait()
        pipe.send("ready")
        results = await asyncio.gather(*tasks, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            pipe.send(f"{len(failures)} subscribers failed: {failures[0]!r}")
        return arrivals

    pipe.send(asyncio.run(run()))


async def _setup(base: str, database_url: str) -> tuple[str, str, str]:
    from signoff.database import create_engine, create_sessionmaker
    from signoff.models import Role
    from signoff.resolvers.actors import create_token

    engine = create_engine(database_url)
    sessionmaker = create_sessionmaker(engine)
    async with sessionmaker() as session:
        admin = (await create_token(session=session, name="bench-admin", role=Role.ADMIN)).token
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        slug = f"bench-{os.getpid()}"
        created = (
            await http.post(
                "/graphql",
                headers={"Authorization": f"Bearer {admin}"},
                json={
                    "query": "mutation($s: String!) { createQueue(input: "
                    '{slug: $s, name: "Bench"}) { id } }',
                    "variables": {"s": slug},
                },
            )
        ).json()
        queue_id = created["data"]["createQueue"]["id"]
    async with sessionmaker() as session:
        reviewer = (
            await create_token(
                session=session, name="bench-reviewer", role=Role.REVIEWER, queue_slugs=[slug]
            )
        ).token
    await engine.dispose()
    return admin, reviewer, queue_id


async def _mutate(
    base: str, admin: str, queue_id: str, mutations: int, rate: float
) -> dict[str, float]:
    sent: dict[str, float] = {}
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for i in range(mutations):
            started = time.monotonic()
            response = await http.post(
                "/graphql",
                headers={"Authorization": f"Bearer {admin}"},
                json={
                    "query": CREATE_TASK,
                    "variables": {
                        "i": {"queueId": queue_id, "kind": "REVIEW", "title": f"bench {i}"}
                    },
                },
            )
            sent[response.json()["data"]["createTask"]["id"]] = time.time()
            await asyncio.sleep(max(0.0, 1 / rate - (time.monotonic() - started)))
    return sent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


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
    parser.add_argument("--database-url", help="default: a fresh SQLite file")
    parser.add_argument("--redis-url", help="default: the embedded in-memory hub")
    args = parser.parse_args()

    database_url = args.database_url or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/bench.db"
    port = free_port()
    env = {
        **os.environ,
        "SIGNOFF_DATABASE_URL": database_url,
        "SIGNOFF_PORT": str(port),
        "SIGNOFF_LOG_LEVEL": "warning",
        "SIGNOFF_SUBSCRIBER_BUFFER": "1024",
    }
    if args.redis_url:
        env.update(
            SIGNOFF_REDIS_URL=args.redis_url, SIGNOFF_EVENTS_CHANNEL=f"signoff:bench:{os.getpid()}"
        )
    server = subprocess.Popen([sys.executable, "-m", "signoff", "serve"], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        admin, reviewer, queue_id = asyncio.run(_setup(base, database_url))
        time.sleep(1.5)  # the relay stamps the setup's own events
        after = httpx.post(
            f"{base}/graphql",
            headers={"Authorization": f"Bearer {reviewer}"},
            json={"query": "{ changeFeedCursor }"},
        ).json()["data"]["changeFeedCursor"]
        rss_idle = rss_kib(server.pid)

        pipes = []
        per_worker = [args.subscribers // args.workers] * args.workers
        per_worker[0] += args.subscribers - sum(per_worker)
        ctx = multiprocessing.get_context("spawn")
        for count in per_worker:
            parent, child = ctx.Pipe()
            ctx.Process(
                target=_worker,
                args=(
                    args.connect_interval,
                    child,
                    f"ws://127.0.0.1:{port}/graphql",
                    reviewer,
                    queue_id,
                    after,
                    count,
                    args.mutations,
                ),
                daemon=True,
            ).start()
            pipes.append(parent)
        for pipe in pipes:
            assert pipe.recv() == "ready"
        time.sleep(2.0)  # let the server register every subscription
        rss_connected = rss_kib(server.pid)

        started = time.time()
        sent = asyncio.run(_mutate(base, admin, queue_id, args.mutations, args.rate))
        latencies: list[float] = []
        last_arrival = started
        for pipe in pipes:
            result: Any = pipe.recv()
            if isinstance(result, str):
                print(result)
                result = pipe.recv()
            for entity_id, times in result.items():
                latencies.extend(t - sent[entity_id] for t in times)
                last_arrival = max(last_arrival, *times)
        rss_end = rss_kib(server.pid)
    finally:
        server.terminate()
        server.wait()

    delivered = len(latencies)
    expected = args.subscribers * args.mutations
    ms = [x * 1000 for x in latencies]
    print(
        f"subscribers={args.subscribers} mutations={args.mutations} rate={args.rate}/s "
        f"workers={args.workers} "
        f"database={'postgresql' if 'postgres' in database_url else 'sqlite'}"
        f" hub={'redis' if args.redis_url else 'memory'}"
    )
    print(f"frames delivered: {delivered} of {expected}")
    print(
        f"latency ms: p50={percentile(ms, 0.50):.1f} p95={percentile(ms, 0.95):.1f} "
        f"p99={percentile(ms, 0.99):.1f} max={max(ms):.1f} mean={statistics.fmean(ms):.1f}"
    )
    print(f"events delivered per second: {delivered / (last_arrival - started):.0f}")
    print(
        f"server RSS: idle {rss_idle / 1024:.1f} MiB, with subscribers "
        f"{rss_connected / 1024:.1f} MiB, after {rss_end / 1024:.1f} MiB; per connection "
        f"{(rss_connected - rss_idle) / args.subscribers:.1f} KiB"
    )


if __name__ == "__main__":
    main()
