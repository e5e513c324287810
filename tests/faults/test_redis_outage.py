"""Redis killed and started again under load: mutations keep committing, ``signoff worker``
logs the outage once, stays up and delivers what was approved meanwhile once Redis is back
(its sweep finds the deliveries whose jobs never reached Redis)."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from signoff.config import Settings
from signoff.database import SessionMaker
from tests.faults.redis_server import RedisServer, requires_redis_server, worker_process
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.test_crash import applied_count, approve_many, eventually
from tests.live import Server, queue_subscription
from tests.log_lines import log_lines, messages, problems
from tests.processes import LOOPBACK_NETWORKS
from tests.receivers import Receiver, serve

pytestmark = requires_redis_server

BATCH = 5


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
def settings(database_url: str, redis_server: RedisServer) -> Settings:
    """The app on the test's own Redis: its deliveries go to ``signoff worker``."""
    return Settings(
        database_url=database_url,
        redis_url=redis_server.url,
        sweep_interval_seconds=1,
        secret_key=os.environ["SIGNOFF_SECRET_KEY"],
        audit_signing_key=os.environ["SIGNOFF_AUDIT_SIGNING_KEY"],
        delivery_allow_networks=LOOPBACK_NETWORKS,
    )


@pytest.fixture
def worker(settings: Settings, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    assert settings.redis_url is not None
    with worker_process(settings.database_url, settings.redis_url, tmp_path) as running:
        yield running


async def test_the_worker_rides_out_a_redis_restart(
    gql: GraphQLClient,
    sessionmaker: SessionMaker,
    redis_server: RedisServer,
    worker: tuple[subprocess.Popen[bytes], Path],
    caplog: pytest.LogCaptureFixture,
) -> None:
    process, log = worker
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        await approve_many(world, BATCH)
        await eventually(lambda: applied_count(sessionmaker), 30, until=BATCH)

        redis_server.kill()
        with caplog.at_level(logging.INFO, logger="signoff.outages"):
            await approve_many(world, BATCH)  # each commits; its job cannot reach Redis
        await asyncio.sleep(2.5)  # arq alone exited about a second after Redis went away
        assert process.poll() is None, log.read_text()[-2000:]

        redis_server.start()
        await eventually(lambda: applied_count(sessionmaker), 30, until=2 * BATCH)
        assert len(receiver.applied) == 2 * BATCH
        await eventually(lambda: "Redis reachable again" in log.read_text(), 10)

    lines = log_lines(log)
    assert len(messages(lines, "Redis unreachable")) == 1
    assert len(messages(lines, "Redis reachable again")) == 1
    assert not problems(lines)
    jobs = [line for line in lines if line.get("job") == "deliver_proposal"]
    assert jobs and all(isinstance(line["duration_ms"], float) for line in jobs)
    job_queue = [r.getMessage() for r in caplog.records if "job queue" in r.getMessage()]
    assert len(job_queue) == 1 and "unreachable" in job_queue[0], job_queue


async def test_events_committed_while_redis_is_down_reach_other_processes(
    gql: GraphQLClient,
    settings: Settings,
    redis_server: RedisServer,
    serve: Callable[..., Awaitable[Server]],
) -> None:
    """This process writes; a subscriber of another ``signoff serve`` sees every event."""
    assert settings.redis_url is not None
    server = await serve(
        SIGNOFF_REDIS_URL=settings.redis_url, SIGNOFF_EVENTS_CHANNEL=settings.events_channel
    )
    world = await build_world(gql)
    async with queue_subscription(server, world.admin, queue_id=world.queue_id) as watching:
        await server.subscriptions_live(1)  # subscribed before the first event
        created = [await _create_task(gql, world, "before")]
        await eventually(lambda: _tasks_seen(watching.events), 15, until=created)
        redis_server.kill()
        created += [await _create_task(gql, world, f"during-{n}") for n in range(BATCH)]
        redis_server.start()
        await eventually(lambda: _tasks_seen(watching.events), 20, until=created)


def _tasks_seen(events: list[dict[str, Any]]) -> list[str]:
    return [event["entityId"] for event in events if event["entityType"] == "task"]


async def _create_task(gql: GraphQLClient, world: World, title: str) -> str:
    data = await gql(
        "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }",
        {"input": {"queueId": world.queue_id, "kind": "REVIEW", "title": title}},
        world.agent,
    )
    task_id: str = data["createTask"]["id"]
    return task_id
