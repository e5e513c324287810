"""Crash safety: two real ``signoff worker`` processes on PostgreSQL and Redis deliver 500
approved proposals; one is killed with SIGKILL midway and restarted. Every proposal is
applied; the receiver saw every proposal, and any repeat carried the same webhook-id.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from sqlmodel import col, func, select

from signoff.config import Settings
from signoff.database import SessionMaker
from signoff.models import DeliveryAttempt, Proposal, ProposalState, ResponseClass
from tests.conftest import REDIS_URL, requires_postgres, requires_redis
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.test_runners import arq_settings
from tests.processes import signoff_env
from tests.receivers import Answer, Receiver, serve
from tests.redis_keys import unique_queue

logger = logging.getLogger("tests.crash")

PROPOSALS = 500
KILL_AFTER = 150

pytestmark = [requires_postgres, requires_redis, pytest.mark.timeout(150)]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return arq_settings(database_url, unique_queue())


class Workers:
    """``python -m signoff worker`` processes, each logging to its own file."""

    def __init__(self, settings: Settings, logs: Path) -> None:
        assert settings.redis_url is not None
        self.logs = logs
        self.env = signoff_env(
            settings.database_url,
            SIGNOFF_REDIS_URL=settings.redis_url,
            SIGNOFF_ARQ_QUEUE=settings.arq_queue,
            SIGNOFF_DELIVERY_ALLOW_NETWORKS=",".join(map(str, settings.delivery_allow_networks)),
            SIGNOFF_DELIVERY_LEASE_SECONDS="5",
            SIGNOFF_SWEEP_INTERVAL_SECONDS="1",
            SIGNOFF_JOB_TIMEOUT_SECONDS="10",
        )
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        with (self.logs / f"worker-{len(self.processes)}.log").open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "signoff", "worker"],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.processes.append(process)
        return process

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def workers(settings: Settings, tmp_path: Path) -> Iterator[Workers]:
    running = Workers(settings, tmp_path)
    yield running
    running.stop()


async def approve_many(world: World, count: int) -> list[dict[str, Any]]:
    async def one(i: int) -> dict[str, Any]:
        proposal = (await world.propose({"amount": i + 1, "currency": "EUR"}))["proposal"]
        await world.decide(world.reviewers[i % len(world.reviewers)], proposal)
        return proposal

    proposals: list[dict[str, Any]] = []
    for start in range(0, count, 25):
        proposals += await asyncio.gather(*(one(i) for i in range(start, min(count, start + 25))))
    return proposals


async def eventually(check: Callable[[], Any], seconds: float, until: Any = True) -> None:
    """Poll ``check`` (a function or a coroutine function) until it returns ``until``."""
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value == until:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"still not {until} after {seconds} s")


async def applied_count(sessionmaker: SessionMaker) -> int:
    async with sessionmaker() as session:
        count: int = (
            await session.exec(
                select(func.count()).where(col(Proposal.state) == ProposalState.APPLIED.value)
            )
        ).one()
    return count


async def test_killing_a_worker_midway_loses_nothing(
    gql: GraphQLClient,
    settings: Settings,
    workers: Workers,
    sessionmaker: SessionMaker,
) -> None:
    async with serve(Receiver([Answer(delay=0.02)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposals = await approve_many(world, PROPOSALS)
        victim = workers.start()
        workers.start()
        await eventually(lambda: len(receiver.requests) >= KILL_AFTER, 60)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        killed_at = len(receiver.requests)
        workers.start()
        await eventually(lambda: applied_count(sessionmaker), 100, until=PROPOSALS)

    keys = {p["id"]: p["operationKey"] for p in proposals}
    seen = Counter(r.body["action_id"] for r in receiver.requests)
    assert set(seen) == set(keys)
    assert all(r.webhook_id == f"msg_{r.body['action_id']}" for r in receiver.requests)
    assert all(r.body["operation_key"] == keys[r.body["action_id"]] for r in receiver.requests)
    assert receiver.refused == 0
    repeats = sum(n - 1 for n in seen.values())
    logger.warning(
        "crash test: %d proposals, worker killed after %d requests, %d requests "
        "in all, %d repeats (same webhook-id) on %d proposals",
        PROPOSALS,
        killed_at,
        len(receiver.requests),
        repeats,
        sum(1 for n in seen.values() if n > 1),
    )
    await _every_attempt_is_on_record(sessionmaker, repeats)
    assert REDIS_URL is not None
    redis = Redis.from_url(REDIS_URL)
    await redis.delete(settings.arq_queue)
    await redis.aclose()


async def _every_attempt_is_on_record(sessionmaker: SessionMaker, repeats: int) -> None:
    """Each proposal has a record of every attempt it counts: those the killed worker had
    in flight read ``UNKNOWN`` (they may have reached the receiver), never the last."""
    async with sessionmaker() as session:
        counts = dict(
            (await session.exec(select(Proposal.id, Proposal.delivery_attempt_count))).all()
        )
        rows = (
            await session.exec(
                select(
                    DeliveryAttempt.proposal_id,
                    DeliveryAttempt.attempt_number,
                    DeliveryAttempt.response_class,
                )
            )
        ).all()
    recorded = Counter(proposal_id for proposal_id, _, _ in rows)
    assert recorded == Counter(counts)
    lost = [(p, n) for p, n, kind in rows if kind == ResponseClass.UNKNOWN]
    assert all(n < counts[p] for p, n in lost)
    assert lost or not repeats, "a request was repeated, yet no attempt was lost"
