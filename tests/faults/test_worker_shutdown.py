"""SIGTERM to ``signoff worker`` with a delivery in flight: the request finishes, its outcome
is recorded, and the worker exits (well within its stop grace)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from signoff.config import Settings
from signoff.database import SessionMaker
from tests.faults.redis_server import RedisServer, requires_redis_server, worker_process
from tests.helpers import GraphQLClient, build_world
from tests.jobs.test_crash import applied_count, approve_many, eventually
from tests.log_lines import log_lines, problems
from tests.processes import LOOPBACK_NETWORKS
from tests.receivers import Answer, Receiver, serve

pytestmark = requires_redis_server

RECEIVER_DELAY_SECONDS = 1.5
EXIT_WITHIN_SECONDS = 5.0


@pytest.fixture
def settings(database_url: str) -> Settings:
    """The API without a job queue: the worker's sweep finds approved proposals."""
    return Settings(
        database_url=database_url,
        embedded_worker=False,
        secret_key=os.environ["SIGNOFF_SECRET_KEY"],
        audit_signing_key=os.environ["SIGNOFF_AUDIT_SIGNING_KEY"],
        delivery_allow_networks=LOOPBACK_NETWORKS,
    )


async def test_sigterm_lets_a_delivery_in_flight_finish(
    gql: GraphQLClient, sessionmaker: SessionMaker, database_url: str, tmp_path: Path
) -> None:
    with (
        RedisServer() as redis_server,
        worker_process(database_url, redis_server.url, tmp_path) as (process, log),
    ):
        async with serve(Receiver([Answer(delay=RECEIVER_DELAY_SECONDS)])) as receiver:
            world = await build_world(gql, url=receiver.url)
            receiver.secret = world.signing_secret
            await approve_many(world, 1)
            await eventually(lambda: receiver.open, 30, until=1)
            told = time.monotonic()
            process.send_signal(signal.SIGTERM)
            while process.poll() is None:
                assert time.monotonic() - told < EXIT_WITHIN_SECONDS, "still running"
                await asyncio.sleep(0.05)
        assert process.returncode == 0, log.read_text()[-2000:]
        assert await applied_count(sessionmaker) == 1
        assert not problems(log_lines(log))
