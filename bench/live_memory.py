"""Memory per console subscriber, and where it goes, on one ``signoff serve``.

One server (a fresh SQLite file, the embedded hub) runs under ``tracemalloc``; K
subscribers in this process each open a websocket (graphql-transport-ws, no
compression), authenticate with one reviewer token and subscribe to ``queueEvents`` of
one queue, as ``bench/fanout.py``'s do. Before the first subscriber connects, the server
makes a full collection and returns free memory (``malloc_trim``), then its RSS is read
and a snapshot taken; ``--settle`` seconds after the server counts every subscription
live (its ``/metrics``), RSS is read and a snapshot taken again (snapshots follow a full
collection unless ``--no-collect``). The differences, divided by K, are reported: RSS
(and RSS once more after a collection and ``malloc_trim``), and the snapshots' by the
file that allocated (grouped by package) and by line. Then M tasks are created one at a
time at up to ``--rate`` per second; **CPU per event** is the server's CPU time from the
first mutation to the last frame's arrival at every subscriber, divided by M (it holds
the mutation's own request too).

``--no-trace`` runs the server without ``tracemalloc``, for CPU and RSS figures
without its overhead. Compare two versions of Signoff by running the script with
``PYTHONPATH`` naming the other version's source tree (the server inherits it),
alternating runs. Example::

    .venv/bin/python bench/live_memory.py --subscribers 1000 --mutations 20
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import httpx
from fanout import (
    CREATE_TASK,
    HOST,
    NO_LIVE_BOUNDS,
    Plan,
    SignoffTarget,
    _graphql,
    cpu_seconds,
    free_port,
    raise_open_files,
    rss_kib,
    stop_server,
    subscribe,
    until_live,
    wait_healthy,
)

# Packages a file's path is grouped under, first match wins; anything else is "other".
PACKAGES = (
    "uvicorn",
    "websockets",
    "strawberry",
    "graphql",
    "starlette",
    "signoff",
    "asyncio",
    "sqlalchemy",
)
SNAPSHOT_WAIT_SECONDS = 60.0


# --- the server ------------------------------------------------------------------


def serve(directory: Path | None, frames: int, collect: bool, argv: list[str]) -> None:
    """Run ``signoff serve``. SIGUSR2 makes a full collection and returns free memory to
    the system (``malloc_trim``). With a ``directory``, ``tracemalloc`` is on and each
    SIGUSR1 writes the next snapshot (after a full collection with ``collect``) there."""
    from signoff.cli import main
    from signoff.live.reclaim import malloc_trim

    trim = malloc_trim()

    def reclaim(signum: int, frame: FrameType | None) -> None:
        gc.collect()
        if trim is not None:
            trim()

    signal.signal(signal.SIGUSR2, reclaim)
    if directory is not None:
        tracemalloc.start(frames)
        taken = 0

        def snapshot(signum: int, frame: FrameType | None) -> None:
            nonlocal taken
            if collect:
                gc.collect()
            path = directory / f"{taken}.snapshot"
            tracemalloc.take_snapshot().dump(str(path.with_suffix(".part")))
            path.with_suffix(".part").rename(path)
            taken += 1

        signal.signal(signal.SIGUSR1, snapshot)
    main(["serve", *argv])


class TracedTarget(SignoffTarget):
    """``signoff serve`` through ``serve``, under ``tracemalloc`` unless ``trace=None``.
    It runs as a script, not ``-m signoff``, so that ``PYTHONPATH`` chooses the version
    (``-m`` puts the current directory first)."""

    def __init__(self, trace: Path | None, frames: int, collect: bool) -> None:
        super().__init__(None, None, 1)
        self.trace = trace
        self.frames = frames
        self.collect = collect
        self.taken = 0

    def start(self, port: int) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "SIGNOFF_DATABASE_URL": self.database_url,
            "SIGNOFF_LOG_LEVEL": "warning",
            "SIGNOFF_SUBSCRIBER_BUFFER": "1024",
        }
        env.update(NO_LIVE_BOUNDS)
        options = ["--serve", "--frames", str(self.frames)]
        if self.trace is not None:
            options += ["--trace-to", str(self.trace)]
        if not self.collect:
            options.append("--no-collect")
        command = [sys.executable, __file__, *options, "--", "--host", HOST, "--port", str(port)]
        return subprocess.Popen(command, env=env)

    @staticmethod
    def reclaim(server: subprocess.Popen[bytes]) -> None:
        """A full collection and ``malloc_trim`` in the server (what a quiet moment makes)."""
        server.send_signal(signal.SIGUSR2)
        time.sleep(1.0)

    def snapshot(self, server: subprocess.Popen[bytes]) -> tracemalloc.Snapshot | None:
        """Have the server write its next snapshot and read it (``None`` untraced)."""
        if self.trace is None:
            return None
        path = self.trace / f"{self.taken}.snapshot"
        self.taken += 1
        server.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + SNAPSHOT_WAIT_SECONDS
        while not path.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the server wrote no snapshot")
            time.sleep(0.1)
        return tracemalloc.Snapshot.load(str(path))


# --- the subscribers -------------------------------------------------------------


class Subscribers:
    """K websocket subscribers in this process, counting the frames they receive."""

    def __init__(self, url: str, plan: Plan, count: int) -> None:
        self.url = url
        self.plan = plan
        self.count = count
        self.subscribed = 0
        self.frames = 0
        self.errors: Counter[str] = Counter()
        self.stop = asyncio.Event()

    async def run_one(self) -> None:
        from websockets.asyncio.client import connect
        from websockets.typing import Subprotocol

        try:
            async with connect(
                self.url,
                subprotocols=[Subprotocol("graphql-transport-ws")],
                compression=None,
                max_size=None,
                open_timeout=120,
                ping_interval=None,
                close_timeout=5,
            ) as ws:
                await subscribe(ws, self.plan.token, self.plan.variables)
                self.subscribed += 1
                stopped = asyncio.ensure_future(self.stop.wait())
                while not self.stop.is_set():
                    received = asyncio.ensure_future(ws.recv())
                    await asyncio.wait({received, stopped}, return_when=asyncio.FIRST_COMPLETED)
                    if not received.done():
                        received.cancel()
                        break
                    message = json.loads(received.result())
                    if message["type"] == "ping":
                        await ws.send(json.dumps({"type": "pong"}))
                    elif message["type"] == "next":
                        self.frames += 1
                    else:
                        raise RuntimeError(f"unexpected {message['type']}")
        except Exception as exc:
            self.errors[f"{type(exc).__name__}: {exc}"[:120]] += 1


async def wait_until(condition: str, check: Callable[[], bool], within: float) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {condition}")
        await asyncio.sleep(0.05)


# --- the report ------------------------------------------------------------------


def package_of(filename: str) -> str:
    parts = Path(filename).parts
    for package in PACKAGES:
        if package in parts:
            return package
    return "other"


def breakdown(
    before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, count: int, lines: int
) -> None:
    by_file = after.compare_to(before, "filename")
    packages: Counter[str] = Counter()
    for stat in by_file:
        packages[package_of(stat.traceback[0].filename)] += stat.size_diff
    total = sum(packages.values())
    print(f"tracemalloc: {total / count / 1024:.1f} KiB per subscriber")
    for package, size in packages.most_common():
        print(f"  {package:12} {size / count / 1024:6.2f} KiB")
    print(f"top {lines} lines (KiB per subscriber, objects per subscriber):")
    for stat in after.compare_to(before, "lineno")[:lines]:
        frame = stat.traceback[0]
        where = "/".join(Path(frame.filename).parts[-2:])
        per = stat.size_diff / count / 1024
        print(f"  {per:6.2f} {stat.count_diff / count:6.2f}  {where}:{frame.lineno}")


# --- the run ---------------------------------------------------------------------


async def measure(args: argparse.Namespace, target: TracedTarget) -> None:
    port = free_port()
    base = f"http://{HOST}:{port}"
    server = target.start(port)
    try:
        await asyncio.to_thread(wait_healthy, base, server, 300)
        plan = await target.prepare([base], 0)
        await asyncio.sleep(args.settle)
        await asyncio.to_thread(target.reclaim, server)  # the start-up's garbage is not counted
        rss_before = rss_kib(server.pid)
        before = await asyncio.to_thread(target.snapshot, server)
        subscribers = Subscribers(base.replace("http://", "ws://") + "/graphql", plan, args.count)
        tasks = [asyncio.create_task(subscribers.run_one()) for _ in range(args.count)]
        await wait_until(
            "every subscriber",
            lambda: subscribers.subscribed + len(subscribers.errors) >= args.count,
            300,
        )
        await until_live(base, subscribers.subscribed, 300)
        await asyncio.sleep(args.settle)
        rss_after = rss_kib(server.pid)
        after = await asyncio.to_thread(target.snapshot, server)
        errors = dict(subscribers.errors)
        print(f"subscribers: {subscribers.subscribed} of {args.count}; errors {errors}")
        await asyncio.to_thread(target.reclaim, server)
        rss_reclaimed = rss_kib(server.pid)
        per = (rss_after - rss_before) / args.count
        reclaimed = (rss_reclaimed - rss_before) / args.count
        traced = " (with tracemalloc's own tables: use --no-trace)" if before is not None else ""
        print(
            f"RSS: {per:.1f} KiB per subscriber ({reclaimed:.1f} after gc and malloc_trim)" + traced
        )
        if before is not None and after is not None:
            breakdown(before, after, args.count, args.lines)
        if args.mutations:
            await mutate(args, target, server, base, subscribers)
        subscribers.stop.set()
        await asyncio.gather(*tasks)
    finally:
        stop_server(server)
        target.close()


async def mutate(
    args: argparse.Namespace,
    target: TracedTarget,
    server: subprocess.Popen[bytes],
    base: str,
    subscribers: Subscribers,
) -> None:
    expected = subscribers.frames + args.mutations * subscribers.subscribed
    cpu = cpu_seconds(server.pid)
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for i in range(args.mutations):
            started = time.monotonic()
            task = {"queueId": target.queue_id, "kind": "REVIEW", "title": f"bench {i}"}
            await _graphql(http, target.admin, CREATE_TASK, {"i": task})
            await asyncio.sleep(max(0.0, 1 / args.rate - (time.monotonic() - started)))
    await wait_until("every frame", lambda: subscribers.frames >= expected, 120)
    used = cpu_seconds(server.pid) - cpu
    print(f"frames: {subscribers.frames} of {expected}")
    print(f"server CPU per event: {used / args.mutations * 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subscribers", dest="count", type=int, default=1000)
    parser.add_argument("--mutations", type=int, default=20)
    parser.add_argument("--rate", type=float, default=5.0, help="mutations per second")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds before a snapshot")
    parser.add_argument("--lines", type=int, default=25, help="lines in the breakdown")
    parser.add_argument("--frames", type=int, default=1, help="tracemalloc frames")
    parser.add_argument("--no-trace", action="store_true", help="no tracemalloc")
    parser.add_argument(
        "--no-collect",
        action="store_true",
        help="snapshots without a full collection first (what RSS holds: cyclic garbage too)",
    )
    parser.add_argument("--keep", type=Path, help="write the snapshots here (default: dropped)")
    parser.add_argument("--serve", dest="serving", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--trace-to", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("serve", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serving:
        serve(args.trace_to, args.frames, not args.no_collect, args.serve)
        return
    raise_open_files()
    with tempfile.TemporaryDirectory(prefix="signoff-live-memory-") as scratch:
        directory = args.keep or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        trace = None if args.no_trace else directory
        target = TracedTarget(trace, args.frames, not args.no_collect)
        asyncio.run(measure(args, target))


if __name__ == "__main__":
    main()
