"""Delivery benchmark: N approved proposals delivered to a local receiver answering 200 at once.

Prints deliveries per second and the p50/p99 time from the approval's commit to the
receiver seeing the request. Two set-ups:

* PostgreSQL + Redis, one ``signoff worker`` process::

    python bench/delivery.py --database-url postgresql://postgres@127.0.0.1:5432/postgres \\
        --redis-url redis://127.0.0.1:6379/0

* the embedded default, SQLite and the in-process runner::

    python bench/delivery.py

Approvals are made through the resolvers (as the API does, without HTTP) by a few
concurrent approvers while the worker runs, so the latency includes any queueing.
A fresh database (and arq queue) is created for the run and dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import uvicorn
from sqlalchemy.engine import make_url
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from signoff.config import Settings, load_sealer, normalise_database_url
from signoff.database import create_engine, create_sessionmaker
from signoff.delivery import webhook_id
from signoff.jobs.runner import InProcessJobs
from signoff.jobs.worker import ArqJobs
from signoff.migrate import migrate
from signoff.models import ApprovalMode, Decision, Role
from signoff.resolvers.access import Viewer
from signoff.resolvers.actors import authenticate, create_token
from signoff.resolvers.approvals import decide_proposal
from signoff.resolvers.proposals import propose_action
from signoff.resolvers.queues import create_queue
from signoff.resolvers.targets import register_target
from signoff.resolvers.work import Services, WorkMaker
from signoff.webhooks import verify

APPROVERS = 8


@dataclass
class Receiver:
    secret: str = ""
    seen: dict[str, float] = field(default_factory=dict)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    expected: int = 0

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        verify(self.secret, headers=request.headers, body=body)
        self.seen.setdefault(request.headers["webhook-id"], time.time())
        if len(self.seen) >= self.expected:
            self.done.set()
        return Response(b'{"ok":true}', media_type="application/json")


@asynccontextmanager
async def serve(receiver: Receiver) -> AsyncIterator[int]:
    app = Starlette(routes=[Route("/hook", receiver.handle, methods=["POST"])])
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="error", lifespan="off", access_log=False
        )
    )
    task = asyncio.create_task(server.serve())
    for _ in range(500):
        if server.started:
            break
        await asyncio.sleep(0.01)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        await task


@asynccontextmanager
async def fresh_database(url: str | None) -> AsyncIterator[str]:
    if url is None:
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        return
    base = make_url(normalise_database_url(url))
    name = f"signoff_bench_{uuid.uuid4().hex[:8]}"
    admin = base.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
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
    async with work() as unit:
        return await authenticate(session=unit.session, token=token)


async def world(work: WorkMaker, port: int) -> tuple[str, str, Viewer, Viewer]:
    admin = await viewer(work, Role.ADMIN, "bench-admin")
    async with work() as unit:
        queue = await create_queue(work=unit, viewer=admin, slug="bench", name="Bench")
    async with work() as unit:
        registered = await register_target(
            work=unit,
            viewer=admin,
            name="bench",
            url=f"http://127.0.0.1:{port}/hook",
            input_schema={"type": "object"},
            approval_mode=ApprovalMode.HUMAN,
            queue_id=queue.id,
        )
    agent = await viewer(work, Role.AGENT, "bench-agent")
    reviewer = await viewer(work, Role.REVIEWER, "bench-reviewer", ["bench"])
    return registered.target.id, registered.signing_secret, agent, reviewer


async def approve_all(
    work: WorkMaker,
    target_id: str,
    agent: Viewer,
    reviewer: Viewer,
    n: int,
    rate: float | None,
) -> dict[str, float]:
    """Propose and approve ``n`` actions, paced at ``rate`` per second if given;
    returns webhook-id -> approval commit time."""
    committed: dict[str, float] = {}
    keys = iter(range(n))
    start = time.time()

    async def approver() -> None:
        for i in keys:
            if rate is not None:
                await asyncio.sleep(max(0.0, start + i / rate - time.time()))
            key = f"bench-{i}"
            async with work() as unit:
                proposed = await propose_action(
                    work=unit,
                    viewer=agent,
                    target_id=target_id,
                    action_code="bench.run",
                    operation_key=key,
                    payload={"i": i},
                )
            async with work() as unit:
                await decide_proposal(
                    work=unit,
                    viewer=reviewer,
                    proposal_id=proposed.proposal.id,
                    decision=Decision.APPROVED,
                    payload_digest=proposed.proposal.payload_digest,
                )
            committed[webhook_id(proposed.proposal.id)] = time.time()

    await asyncio.gather(*(approver() for _ in range(APPROVERS)))
    return committed


def start_worker(settings: Settings) -> subprocess.Popen[bytes]:
    assert settings.redis_url is not None
    env = {
        **os.environ,
        "SIGNOFF_DATABASE_URL": settings.database_url,
        "SIGNOFF_REDIS_URL": settings.redis_url,
        "SIGNOFF_ARQ_QUEUE": settings.arq_queue,
        "SIGNOFF_LOG_LEVEL": "warning",
    }
    return subprocess.Popen([sys.executable, "-m", "signoff", "worker"], env=env)


async def run(
    n: int, database_url: str | None, redis_url: str | None, backlog: bool, rate: float | None
) -> None:
    async with fresh_database(database_url) as url:
        settings = Settings(
            database_url=normalise_database_url(url),
            redis_url=redis_url,
            arq_queue=f"signoff:bench:{uuid.uuid4().hex[:8]}",
        )
        engine = create_engine(settings.database_url, pool_size=20)
        await migrate(engine)
        jobs = ArqJobs(settings) if redis_url else InProcessJobs(settings)
        work = WorkMaker(
            create_sessionmaker(engine), Services(jobs=jobs, sealer=load_sealer(settings))
        )
        receiver = Receiver(expected=n)
        worker = None
        try:
            async with serve(receiver) as port:
                target_id, receiver.secret, agent, reviewer = await world(work, port)
                if isinstance(jobs, ArqJobs):
                    await jobs.start()
                started = time.time()
                if backlog:
                    committed = await approve_all(work, target_id, agent, reviewer, n, rate)
                    approved = time.time()
                if isinstance(jobs, ArqJobs):
                    worker = start_worker(settings)
                else:
                    await jobs.start(work)
                if not backlog:
                    await asyncio.sleep(2)  # let the worker connect before the clock starts
                    started = time.time()
                    committed = await approve_all(work, target_id, agent, reviewer, n, rate)
                    approved = time.time()
                await asyncio.wait_for(receiver.done.wait(), timeout=600)
                finished = max(receiver.seen.values())
        finally:
            await jobs.stop()
            if worker is not None:
                worker.terminate()
                worker.wait()
        await engine.dispose()
    mode = "PostgreSQL + Redis, one `signoff worker`" if redis_url else "SQLite, in-process runner"
    pace = "backlog" if backlog else f"live, approvals paced at {rate}/s" if rate else "live"
    print(f"{mode}: {n} deliveries, {pace}")
    if backlog:
        first = min(receiver.seen.values())
        print(f"  approvals (worker stopped): {n / (approved - started):.0f}/s")
        print(
            f"  deliveries: {n / (finished - first):.0f}/s "
            f"(first to last delivery, {finished - first:.1f} s)"
        )
        return
    latencies = sorted((receiver.seen[k] - committed[k]) * 1000 for k in committed)
    print(f"  approvals: {n / (approved - started):.0f}/s")
    print(
        f"  deliveries: {n / (finished - started):.0f}/s "
        f"(first approval to last delivery, {finished - started:.1f} s)"
    )
    print(
        f"  approval commit -> receiver: p50 {statistics.median(latencies):.0f} ms, "
        f"p99 {latencies[int(len(latencies) * 0.99) - 1]:.0f} ms, "
        f"max {latencies[-1]:.0f} ms"
    )
    print(
        f"  machine: {platform.platform()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )


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
    args = parser.parse_args()
    asyncio.run(run(args.n, args.database_url, args.redis_url, args.backlog, args.rate))


if __name__ == "__main__":
    main()
