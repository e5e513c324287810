"""Delivery benchmark: N approved proposals delivered to a receiver answering 200 at once.

The receiver (``bench/counting_receiver.py``) runs in its own process and verifies every
signature. Prints deliveries per second, the p50/p99 time from the approval's commit to
the receiver seeing the request, and SQL statements and Redis commands per delivery.
Two set-ups:

* PostgreSQL + Redis, ``signoff worker`` processes (one, or ``--workers N`` sharing the
  backlog)::

    python bench/delivery.py --database-url postgresql://postgres@127.0.0.1:5432/postgres \\
        --redis-url redis://127.0.0.1:6379/0

* the embedded default, SQLite and the in-process runner::

    python bench/delivery.py

plus ``--database-url`` alone: PostgreSQL with the in-process runner. ``--backlog``
approves everything first, stamps the approvals' events (as the API processes' event
service would have), and then starts the worker (its drain rate), and measures the
drain's floor in the same run: a bare aiohttp client posting the same signed requests
(bodies and headers built beforehand) to a receiver of its own (the same program), 128 in
flight (``--floor-concurrency``), timed the same way (first to last request seen by the
receiver), the median of three runs (``--floor-runs``); the drain is printed beside it
with their ratio. ``--rate R``
approves R per second while the worker runs. Proposals are made before the clock starts;
approvals go through the resolvers (as the API does, without HTTP) by a few concurrent
approvers, so the latency includes any queueing. A fresh database (and arq queue) is
created for the run and dropped afterwards.

With Redis, ``--workers N`` starts N ``signoff worker`` processes that share the
deliveries (the split each recorded is printed), and the workers' CPU and statements are
summed. The target's ``maxConcurrency`` is ``--target-concurrency``, by default the
workers' concurrency summed: a target's limit holds across workers, so at one worker's
concurrency the first worker to claim fills it and the others find it full.

With Redis and ``--backlog``, the target is paused while the workers start, and resumed
once they are up and one of them has run its start-up reconciliation: the drain is the
backlog of a resumed target, and its CPU, statements and Redis commands are counted from
the resumption. Neither the reconciliation (one run a minute in a running worker: the
leases, the change feed, the audit log against its checkpoint) nor the wake jobs the
approvals left queued (a running worker takes at most 20 a second, as they come) is then
charged to a drain of a few seconds, as they were before; the floor's client has no such
start either. The drain's clock was and is the receiver's: first to last request seen.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import aiohttp
import httpx
import psycopg
from redis.asyncio import Redis
from sqlalchemy.engine import make_url
from sqlmodel import col, select

from signoff import metrics
from signoff.config import Settings, load_sealer, normalise_database_url, parse_networks
from signoff.constants import DELIVERY_CONCURRENCY
from signoff.database import SessionMaker, create_engine, create_sessionmaker
from signoff.delivery import request_body, request_headers, webhook_id
from signoff.events import feed
from signoff.jobs.runner import InProcessJobs
from signoff.jobs.worker import ArqJobs
from signoff.migrate import migrate
from signoff.models import ApprovalMode, Decision, Proposal, ReconciliationRun, Role
from signoff.resolvers.access.actors import authenticate, create_token
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.approval.approvals import decide_proposal
from signoff.resolvers.approval.proposals import propose_action
from signoff.resolvers.approval.queues import create_queue
from signoff.resolvers.core.work import JobQueue, Services, WorkMaker
from signoff.resolvers.targets.targets import pause_target, register_target, resume_target

APPROVERS = 8
# Approver processes begin this long after they are spawned, all at once.
APPROVER_STARTUP_SECONDS = 3.0

# The bench's targets and receivers are on loopback, which deliveries reach only if allowed.
LOOPBACK_TEXT = "127.0.0.0/8,::1/128"
LOOPBACK = parse_networks("SIGNOFF_DELIVERY_ALLOW_NETWORKS", LOOPBACK_TEXT)


class Receiver:
    """``bench/counting_receiver.py`` in a process of its own."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.http = httpx.AsyncClient()

    def start(self, secret: str) -> None:
        env = {**os.environ, "SIGNOFF_RECEIVER_SECRET": secret}
        script = Path(__file__).with_name("counting_receiver.py")
        self.process = subprocess.Popen(
            [sys.executable, str(script), "--port", str(self.port)], env=env
        )

    async def wait_ready(self) -> None:
        for _ in range(500):
            try:
                await self.stats()
                return
            except httpx.TransportError:
                await asyncio.sleep(0.02)
        raise RuntimeError("the receiver did not start")

    async def stats(self) -> dict[str, int]:
        answer: dict[str, int] = (await self.http.get(f"{self.url}/stats")).json()
        return answer

    async def wait_for(self, n: int) -> dict[str, float]:
        """Every delivery's first-seen time, once ``n`` were seen (polled a few times a
        second, with one client: the bench shares the machine with what it measures)."""
        async with asyncio.timeout(600):
            while (await self.stats())["distinct"] < n:  # noqa: ASYNC110 (another process)
                await asyncio.sleep(0.25)
        seen: dict[str, float] = (await self.http.get(f"{self.url}/seen")).json()
        return seen

    async def stop(self) -> None:
        await self.http.aclose()
        if self.process is not None:
            self.process.terminate()
            self.process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def redis_calls(url: str | None) -> int:
    """Commands the Redis server has run so far (``INFO commandstats``), 0 without Redis."""
    if url is None:
        return 0
    client = Redis.from_url(url)
    try:
        stats = await client.info("commandstats")
    finally:
        await client.aclose()
    return sum(int(entry["calls"]) for entry in stats.values())


async def forget_queue(url: str | None, queue: str) -> None:
    """Delete the run's arq keys (its queue, and the jobs the worker's crons left in it):
    every job id of the run's queue carries the queue's name."""
    if url is None:
        return
    client = Redis.from_url(url)
    try:
        keys = [key async for key in client.scan_iter(match=f"*{queue}*", count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


async def worker_statements(metrics_port: int | None) -> float:
    """The worker process's ``signoff_sql_statements_total`` (this process's without one)."""
    if metrics_port is None:
        return float(metrics.SQL_STATEMENTS._value.get())
    return (await worker_counters(metrics_port))["signoff_sql_statements_total"]


async def worker_counters(metrics_port: int) -> dict[str, float]:
    """A worker's SQL statements and recorded deliveries (``signoff_deliveries_total``,
    summed over outcomes) from its metrics endpoint."""
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
    counters = {"signoff_deliveries_total": 0.0}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == "signoff_sql_statements_total":
            counters[name] = float(value)
        elif name.startswith("signoff_deliveries_total{"):
            counters["signoff_deliveries_total"] += float(value)
    if "signoff_sql_statements_total" not in counters:
        raise RuntimeError("the worker exports no signoff_sql_statements_total")
    return counters


@asynccontextmanager
async def fresh_database(url: str | None, *, template: str | None = None) -> AsyncIterator[str]:
    """A new database on the server of ``url`` (a SQLite file without one), dropped after;
    on PostgreSQL a copy of the database ``template`` when one is named."""
    if url is None:
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        return
    base = make_url(normalise_database_url(url))
    name = f"signoff_bench_{uuid.uuid4().hex[:8]}"
    admin = base.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def viewer(work: WorkMaker, role: Role, name: str, queues: list[str] | None = None) -> Viewer:
    async with work() as unit:
        token = (
            await create_token(work=unit, name=name, role=role, queue_slugs=queues or [])
        ).token
    TOKENS[name] = token
    return await authenticated(work, token)


async def authenticated(work: WorkMaker, token: str) -> Viewer:
    async with work() as unit:
        return await authenticate(session=unit.session, token=token)


TOKENS: dict[str, str] = {}


async def world(
    work: WorkMaker, url: str, target_concurrency: int
) -> tuple[str, str, Viewer, Viewer]:
    admin = await viewer(work, Role.ADMIN, "bench-admin")
    async with work() as unit:
        queue = await create_queue(work=unit, viewer=admin, slug="bench", name="Bench")
    async with work() as unit:
        registered = await register_target(
            work=unit,
            viewer=admin,
            name="bench",
            url=f"{url}/hook",
            input_schema={"type": "object"},
            approval_mode=ApprovalMode.HUMAN,
            queue_id=queue.id,
            max_concurrency=target_concurrency,
        )
    agent = await viewer(work, Role.AGENT, "bench-agent")
    reviewer = await viewer(work, Role.REVIEWER, "bench-reviewer", ["bench"])
    return registered.target.id, registered.signing_secret, agent, reviewer


@dataclass(frozen=True)
class Proposed:
    proposal_id: str
    digest: str


async def propose_all(work: WorkMaker, target_id: str, agent: Viewer, n: int) -> list[Proposed]:
    """Propose ``n`` actions (before the clock starts: what is measured is approval)."""
    keys = iter(range(n))
    proposed: list[Proposed] = []

    async def proposer() -> None:
        for i in keys:
            async with work() as unit:
                made = await propose_action(
                    work=unit,
                    viewer=agent,
                    target_id=target_id,
                    action_code="bench.run",
                    operation_key=f"bench-{i}",
                    payload={"i": i},
                )
            proposed.append(Proposed(made.proposal.id, made.proposal.payload_digest))

    await asyncio.gather(*(proposer() for _ in range(APPROVERS)))
    return proposed


class CommitClock:
    """A job queue that notes when each approval's transaction committed: the unit of work
    calls ``enqueue_delivery`` first thing after its commit."""

    def __init__(self, jobs: JobQueue) -> None:
        self.jobs = jobs
        self.committed: dict[str, float] = {}

    async def enqueue_delivery(
        self, proposal_id: str, attempt: int, at: datetime | None = None
    ) -> None:
        self.committed.setdefault(webhook_id(proposal_id), time.time())
        await self.jobs.enqueue_delivery(proposal_id, attempt, at)

    async def enqueue_notification(
        self, notification_id: str, attempt: int, at: datetime | None = None
    ) -> None:
        await self.jobs.enqueue_notification(notification_id, attempt, at)


async def stamp_backlog(sessionmaker: SessionMaker) -> None:
    """Stamp and mark published every event the approvals wrote, as a running API
    process's event service does as they commit: a worker started on a backlog finds it
    so. (The bench's approvals run without an event service; left unstamped, the
    worker's first ticks would stamp them, and the drain's CPU would count that.)"""
    while True:
        async with sessionmaker() as session:
            stamped = await feed.stamp_pending(session)
            await feed.mark_published(session, [event.id for event in stamped])
            await session.commit()
        if not stamped:
            return


async def hold_backlog(work: WorkMaker, sessionmaker: SessionMaker, target_id: str) -> Viewer:
    """Pause the bench's target before the workers start (its event stamped, as the
    approvals' are); returns the operator who did."""
    operator = await viewer(work, Role.OPERATOR, "bench-operator")
    async with work() as unit:
        await pause_target(work=unit, viewer=operator, target_id=target_id, reason="bench start")
    await stamp_backlog(sessionmaker)
    return operator


async def reconciled(sessionmaker: SessionMaker) -> None:
    """Return once the workers' start-up reconciliation has run (one worker runs it, at
    start and every minute after)."""
    async with asyncio.timeout(120):
        while True:
            async with sessionmaker() as session:
                finished = select(ReconciliationRun.id).where(
                    col(ReconciliationRun.finished_at).is_not(None)
                )
                if (await session.exec(finished)).first() is not None:
                    break
            await asyncio.sleep(0.1)


async def release_backlog(work: WorkMaker, operator: Viewer, target_id: str) -> None:
    """Resume the target: its backlog is enqueued and claimed at once. (The resumption's
    one event is the workers' to stamp: stamping here too would contend with theirs.)"""
    async with work() as unit:
        await resume_target(work=unit, viewer=operator, target_id=target_id)


async def approve_all(
    work: WorkMaker,
    reviewer: Viewer,
    proposals: list[Proposed],
    rate: float | None,
    start_at: float | None = None,
) -> None:
    """Approve ``proposals`` from ``start_at`` (default now), paced at ``rate`` per second
    if given."""
    numbered = iter(enumerate(proposals))
    start = start_at or time.time()
    await asyncio.sleep(max(0.0, start - time.time()))

    async def approver() -> None:
        for i, proposed in numbered:
            if rate is not None:
                await asyncio.sleep(max(0.0, start + i / rate - time.time()))
            async with work() as unit:
                await decide_proposal(
                    work=unit,
                    viewer=reviewer,
                    proposal_id=proposed.proposal_id,
                    decision=Decision.APPROVED,
                    payload_digest=proposed.digest,
                )

    await asyncio.gather(*(approver() for _ in range(APPROVERS)))


@dataclass(frozen=True)
class Floor:
    """The bare POST floor: deliveries per second (the median of its runs), timed as the
    drain is."""

    runs: list[float]
    concurrency: int

    @property
    def rate(self) -> float:
        return statistics.median(self.runs)


async def signed_requests(
    work: WorkMaker, proposals: list[Proposed], secret: str
) -> list[tuple[bytes, dict[str, str]]]:
    """Each proposal's first attempt as Signoff sends it: its body and signed headers."""
    ids = [p.proposal_id for p in proposals]
    async with work() as unit:
        rows = (await unit.session.exec(select(Proposal).where(col(Proposal.id).in_(ids)))).all()
    requests = []
    for proposal in rows:
        body = request_body(proposal)
        requests.append((body, request_headers(proposal, secret, body, 1)))
    return requests


async def bare_post_floor(
    requests: list[tuple[bytes, dict[str, str]]], secret: str, concurrency: int, runs: int
) -> Floor:
    """``runs`` times (a run lasts under a second on a quiet machine, so one is at the
    mercy of a busy moment), post ``requests`` with a bare aiohttp client."""
    rates = [await bare_posts(requests, secret, concurrency) for _ in range(runs)]
    return Floor(rates, concurrency)


async def bare_posts(
    requests: list[tuple[bytes, dict[str, str]]], secret: str, concurrency: int
) -> float:
    """Post ``requests`` with a bare aiohttp client, ``concurrency`` in flight, to a
    counting receiver of their own (same program, same signature checks); the rate."""
    receiver = Receiver()
    receiver.start(secret)
    try:
        await receiver.wait_ready()
        pending = iter(requests)
        url = f"{receiver.url}/hook"
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as http:

            async def poster() -> None:
                for body, headers in pending:
                    async with http.post(url, data=body, headers=headers) as response:
                        await response.read()
                        response.raise_for_status()

            await asyncio.gather(*(poster() for _ in range(concurrency)))
        seen = await receiver.wait_for(len(requests))
    finally:
        await receiver.stop()
    return len(requests) / (max(seen.values()) - min(seen.values()))


async def approve_in_processes(
    settings: Settings, proposals: list[Proposed], rate: float | None, processes: int
) -> dict[str, float]:
    """``approve_all`` split over ``processes`` processes (``--approve-slice``), each taking
    every ``processes``-th proposal at ``rate / processes``; returns their commit times."""
    assert settings.redis_url is not None
    start_at = time.time() + APPROVER_STARTUP_SECONDS
    with tempfile.TemporaryDirectory() as tmp:
        slices = write_slices(Path(tmp), proposals, processes)
        children = []
        for slice_file in slices:
            command = [
                sys.executable,
                __file__,
                "--approve-slice",
                str(slice_file),
                "--database-url",
                settings.database_url,
                "--redis-url",
                settings.redis_url,
                "--arq-queue",
                settings.arq_queue,
                "--reviewer-token",
                TOKENS["bench-reviewer"],
                "--start-at",
                str(start_at),
            ]
            if rate is not None:
                command += ["--rate", str(rate / processes)]
            children.append(await asyncio.create_subprocess_exec(*command))
        for child in children:
            await child.wait()
        return read_commit_times(slices)


def write_slices(folder: Path, proposals: list[Proposed], processes: int) -> list[Path]:
    slices = []
    for index in range(processes):
        slice_file = folder / f"slice-{index}.json"
        mine = proposals[index::processes]
        slice_file.write_text(json.dumps([[p.proposal_id, p.digest] for p in mine]))
        slices.append(slice_file)
    return slices


def read_commit_times(slices: list[Path]) -> dict[str, float]:
    committed: dict[str, float] = {}
    for slice_file in slices:
        committed.update(json.loads(slice_file.with_suffix(".done").read_text()))
    return committed


def approve_slice(slice_file: Path, args: argparse.Namespace) -> None:
    """One approver process: approve the slice, write the commit times beside it."""
    proposals = [Proposed(i, d) for i, d in json.loads(slice_file.read_text())]
    committed = asyncio.run(
        approve_slice_now(
            proposals,
            Settings(
                database_url=args.database_url, redis_url=args.redis_url, arq_queue=args.arq_queue
            ),
            args.reviewer_token,
            args.rate,
            args.start_at,
        )
    )
    slice_file.with_suffix(".done").write_text(json.dumps(committed))


async def approve_slice_now(
    proposals: list[Proposed],
    settings: Settings,
    token: str,
    rate: float | None,
    start_at: float,
) -> dict[str, float]:
    engine = create_engine(settings.database_url, pool_size=APPROVERS)
    jobs = ArqJobs(settings)
    await jobs.start()
    clock = CommitClock(jobs)
    work = WorkMaker(create_sessionmaker(engine), Services(jobs=clock))
    await approve_all(work, await authenticated(work, token), proposals, rate, start_at)
    await jobs.stop()
    await engine.dispose()
    return clock.committed


def start_worker(settings: Settings, metrics_port: int) -> subprocess.Popen[bytes]:
    assert settings.redis_url is not None
    env = {
        **os.environ,
        "SIGNOFF_DELIVERY_CONCURRENCY": str(settings.delivery_concurrency),
        "SIGNOFF_DATABASE_URL": settings.database_url,
        "SIGNOFF_REDIS_URL": settings.redis_url,
        "SIGNOFF_ARQ_QUEUE": settings.arq_queue,
        "SIGNOFF_DELIVERY_ALLOW_NETWORKS": LOOPBACK_TEXT,
        "SIGNOFF_LOG_LEVEL": "warning",
        "SIGNOFF_METRICS_PORT": str(metrics_port),
    }
    return subprocess.Popen([sys.executable, "-m", "signoff", "worker"], env=env)


@dataclass
class Costs:
    """SQL statements, Redis commands and the workers' CPU seconds (user + system, from
    /proc, where there is one) while deliveries were being made."""

    statements: float = 0.0
    redis: int = 0
    cpu: float | None = None

    @classmethod
    async def now(
        cls,
        metrics_ports: list[int],
        redis_url: str | None,
        pids: Sequence[int | None] | None = None,
    ) -> Costs:
        """The workers' (``metrics_ports``, ``pids``) costs so far; this process's without
        workers."""
        ports: list[int | None] = [*metrics_ports] or [None]
        statements = sum([await worker_statements(port) for port in ports])
        cpus = [cpu_seconds(pid) for pid in (pids or [None])]
        cpu = None if None in cpus else sum(c for c in cpus if c is not None)
        return cls(statements, await redis_calls(redis_url), cpu)

    def since(self, start: Costs) -> Costs:
        cpu = None if self.cpu is None or start.cpu is None else self.cpu - start.cpu
        return Costs(self.statements - start.statements, self.redis - start.redis, cpu)


def cpu_seconds(pid: int | None) -> float | None:
    """CPU seconds a process (this one if ``pid`` is ``None``) has used, or ``None``
    without /proc."""
    try:
        fields = Path(f"/proc/{pid or os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(
    n: int,
    database_url: str | None,
    redis_url: str | None,
    backlog: bool,
    rate: float | None,
    target_concurrency: int,
    worker_concurrency: int,
    worker_processes: int,
    approver_processes: int,
    floor_concurrency: int,
    floor_runs: int,
) -> None:
    floor: Floor | None = None
    async with fresh_database(database_url) as url:
        settings = Settings(
            database_url=normalise_database_url(url),
            redis_url=redis_url,
            arq_queue=f"signoff:bench:{uuid.uuid4().hex[:8]}",
            delivery_concurrency=worker_concurrency,
            delivery_allow_networks=LOOPBACK,  # the counting receiver listens on loopback
        )
        engine = create_engine(settings.database_url, pool_size=20)
        await migrate(engine)
        if not redis_url:
            metrics.count_statements(engine)  # the in-process runner shares this engine
        jobs = ArqJobs(settings) if redis_url else InProcessJobs(settings)
        clock = CommitClock(jobs)
        sessionmaker = create_sessionmaker(engine)
        work = WorkMaker(
            sessionmaker,
            Services(jobs=clock, sealer=load_sealer(settings), destinations=settings.destinations),
        )
        receiver = Receiver()
        metrics_ports = [free_port() for _ in range(worker_processes)] if redis_url else []
        workers: list[subprocess.Popen[bytes]] = []
        try:
            target_id, secret, agent, reviewer = await world(work, receiver.url, target_concurrency)
            proposals = await propose_all(work, target_id, agent, n)
            receiver.start(secret)
            await receiver.wait_ready()
            if isinstance(jobs, ArqJobs):
                await jobs.start()
            if backlog:
                started = time.time()
                await approve_all(work, reviewer, proposals, rate)
                approved = time.time()
                await stamp_backlog(sessionmaker)
                requests = await signed_requests(work, proposals, secret)
                floor = await bare_post_floor(requests, secret, floor_concurrency, floor_runs)
            before = await Costs.now([], redis_url)
            if isinstance(jobs, ArqJobs):
                operator = await hold_backlog(work, sessionmaker, target_id) if backlog else None
                workers = [start_worker(settings, port) for port in metrics_ports]
                for port in metrics_ports:
                    await wait_for_metrics(port)
                if operator is not None:
                    await reconciled(sessionmaker)
                before = await Costs.now(metrics_ports, redis_url, [w.pid for w in workers])
                if operator is not None:
                    await release_backlog(work, operator, target_id)
            else:
                await jobs.start(work)
            if not backlog:
                await asyncio.sleep(2)  # let the worker connect before the clock starts
                before = await Costs.now(metrics_ports, redis_url, [w.pid for w in workers] or None)
                started = time.time()
                if approver_processes > 1:
                    started += APPROVER_STARTUP_SECONDS  # the processes start together then
                    clock.committed.update(
                        await approve_in_processes(settings, proposals, rate, approver_processes)
                    )
                else:
                    await approve_all(work, reviewer, proposals, rate)
                approved = time.time()
            seen = await receiver.wait_for(n)
            costs = (
                await Costs.now(metrics_ports, redis_url, [w.pid for w in workers] or None)
            ).since(before)
            split = await recorded_by_each(metrics_ports, n)
            received = (await receiver.stats())["requests"]
            finished = max(seen.values())
        finally:
            await jobs.stop()
            for worker in workers:
                worker.terminate()
            for worker in workers:
                worker.wait()
            await receiver.stop()
            await forget_queue(redis_url, settings.arq_queue)
        await engine.dispose()
    report(
        settings.database_url,
        n,
        redis_url,
        backlog,
        rate,
        started,
        approved,
        clock.committed,
        seen,
        finished,
        costs,
        floor,
        len(metrics_ports),
    )
    print(f"  requests received: {received} for {n} proposals")
    if len(split) > 1:
        print(f"  deliveries recorded by each worker: {', '.join(map(str, split))}")


def report(
    settings_url: str,
    n: int,
    redis_url: str | None,
    backlog: bool,
    rate: float | None,
    started: float,
    approved: float,
    committed: dict[str, float],
    seen: dict[str, float],
    finished: float,
    costs: Costs,
    floor: Floor | None,
    workers: int,
) -> None:
    database = "SQLite" if settings_url.startswith("sqlite") else "PostgreSQL"
    mode = (
        f"{database} + Redis, {workers} `signoff worker` process{'es' if workers > 1 else ''}"
        if redis_url
        else f"{database}, in-process runner"
    )
    pace = "backlog" if backlog else f"live, approvals paced at {rate}/s" if rate else "live"
    print(f"{mode}: {n} deliveries, {pace}")
    if backlog:
        first = min(seen.values())
        print(
            f"  approvals (worker stopped; proposed beforehand): {n / (approved - started):.0f}/s"
        )
        drain = n / (finished - first)
        print(f"  deliveries: {drain:.0f}/s (first to last delivery, {finished - first:.1f} s)")
        if floor is not None:
            runs = ", ".join(f"{rate:.0f}" for rate in floor.runs)
            print(
                f"  floor, a bare aiohttp client posting the same signed requests "
                f"({floor.concurrency} in flight): {floor.rate:.0f}/s (median of {runs})"
            )
            print(f"  ratio to the floor: {drain / floor.rate:.2f}x")
    else:
        latencies = sorted((seen[k] - committed[k]) * 1000 for k in committed)
        print(f"  approvals (proposed beforehand): {n / (approved - started):.0f}/s")
        print(
            f"  deliveries: {n / (finished - started):.0f}/s "
            f"(first approval to last delivery, {finished - started:.1f} s)"
        )
        print(
            f"  approval commit -> receiver: p50 {statistics.median(latencies):.0f} ms, "
            f"p99 {latencies[int(len(latencies) * 0.99) - 1]:.0f} ms, "
            f"max {latencies[-1]:.0f} ms"
        )
    scope = "the workers'" if redis_url else "this process's (approvals included when live)"
    print(f"  SQL statements per delivery ({scope}): {costs.statements / n:.2f}")
    if redis_url:
        print(f"  Redis commands per delivery (all clients): {costs.redis / n:.2f}")
    if costs.cpu is not None:
        whose = "the workers'" if redis_url else "this process's (approvals included when live)"
        print(f"  CPU per delivery ({whose}, user + system): {costs.cpu / n * 1000:.2f} ms")
    print(
        f"  machine: {platform.platform()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )


async def recorded_by_each(metrics_ports: list[int], n: int) -> list[int]:
    """How many of the ``n`` deliveries each worker recorded since it started (the first
    may have begun before the last was up), once all are: read after the costs, so the
    last flushes' wait is not counted in them; empty without workers."""
    if not metrics_ports:
        return []
    async with asyncio.timeout(60):
        while True:
            counters = [await worker_counters(port) for port in metrics_ports]
            split = [int(c["signoff_deliveries_total"]) for c in counters]
            if sum(split) >= n:
                return split
            await asyncio.sleep(0.1)


async def wait_for_metrics(port: int) -> None:
    for _ in range(3000):  # a minute: on a busy machine the worker takes a while to start
        try:
            await worker_statements(port)
            return
        except (httpx.TransportError, RuntimeError):
            await asyncio.sleep(0.02)
    raise RuntimeError("the worker did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--database-url", help="PostgreSQL server (default: a SQLite file)")
    parser.add_argument("--redis-url", help="Redis (default: the in-process runner)")
    parser.add_argument(
        "--backlog",
        action="store_true",
        help="approve all first, then start the worker: its drain rate",
    )
    parser.add_argument("--rate", type=float, help="approvals per second (default: flat out)")
    parser.add_argument(
        "--worker-concurrency",
        type=int,
        default=DELIVERY_CONCURRENCY,
        help=f"the worker's SIGNOFF_DELIVERY_CONCURRENCY (default {DELIVERY_CONCURRENCY})",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="`signoff worker` processes sharing the deliveries (with Redis; default 1)",
    )
    parser.add_argument(
        "--target-concurrency",
        type=int,
        help="the bench target's maxConcurrency (default: the workers' concurrency, summed)",
    )
    parser.add_argument(
        "--approver-processes",
        type=int,
        default=1,
        help="approve from this many processes (with Redis; default 1: this process)",
    )
    parser.add_argument(
        "--floor-concurrency",
        type=int,
        default=128,
        help="requests in flight for the bare POST floor (--backlog; default 128)",
    )
    parser.add_argument(
        "--floor-runs",
        type=int,
        default=3,
        help="runs of the bare POST floor, whose median is the floor (default 3)",
    )
    parser.add_argument("--approve-slice", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--arq-queue", help=argparse.SUPPRESS)
    parser.add_argument("--reviewer-token", help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.approve_slice is not None:
        approve_slice(args.approve_slice, args)
        return
    asyncio.run(
        run(
            args.n,
            args.database_url,
            args.redis_url,
            args.backlog,
            args.rate,
            args.target_concurrency or args.workers * args.worker_concurrency,
            args.worker_concurrency,
            args.workers,
            args.approver_processes,
            args.floor_concurrency,
            args.floor_runs,
        )
    )


if __name__ == "__main__":
    main()
