"""Several ``signoff serve`` processes sharing PostgreSQL and Redis, and Redis going away."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from sqlmodel import col, select

from signoff.database import SessionMaker
from signoff.models import ChangeEvent
from signoff.resolvers.feed.subscriptions import decode_cursor
from tests.conftest import requires_postgres, requires_redis
from tests.events.test_written_objects import WATCH
from tests.helpers import CLAIM, build_world
from tests.live import (
    Server,
    Subscription,
    feed_settled,
    free_port,
    head_cursor,
    http_gql,
    queue_subscription,
    stamp_now,
    unique_channel,
    world_at_head,
)

Serve = Callable[..., Awaitable[Server]]


@requires_postgres
@requires_redis
async def test_a_subscriber_on_one_process_sees_mutations_made_through_another(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    # A long relay interval: only Redis pub/sub can deliver within the test's wait.
    env = {"SIGNOFF_EVENTS_CHANNEL": unique_channel(), "SIGNOFF_EVENTS_RELAY_SECONDS": "60"}
    a, b = await serve(**env), await serve(**env)
    async with http_gql(b, sessionmaker) as through_b:
        world = await build_world(through_b)
        reviewer = world.reviewers[0]
        await stamp_now(sessionmaker)  # the tokens' membership events, written directly
        after = await head_cursor(through_b, reviewer)
        async with queue_subscription(a, reviewer, queue_id=world.queue_id, after=after) as on_a:
            proposed = await world.propose()
            await through_b(CLAIM, {"id": proposed["task"]["id"]}, reviewer)
            await world.decide(reviewer, proposed["proposal"])
            events = await asyncio.wait_for(on_a.wait_for(5), timeout=5)
    assert [e["kind"] for e in events] == [
        "proposal.proposed",
        "task.created",
        "task.claimed",
        "proposal.approved",
        "task.completed",
    ]


@requires_postgres
@requires_redis
async def test_frames_on_another_process_show_what_a_replay_from_the_database_shows(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    """The writer's records travel with its events (``events.wire``): the frames another
    process renders from them are what a replay, which reads the database, shows."""
    env = {"SIGNOFF_EVENTS_CHANNEL": unique_channel(), "SIGNOFF_EVENTS_RELAY_SECONDS": "60"}
    a, b = await serve(**env), await serve(**env)
    async with http_gql(b, sessionmaker) as through_b:
        world, after = await world_at_head(through_b, stamp=True)
        reviewer, variables = world.reviewers[0], {"q": world.queue_id, "a": after}
        async with Subscription(a.ws_url, reviewer, WATCH, variables) as on_a:
            await world.propose()
            live = list(await on_a.wait_for(2, within=5))
        async with Subscription(a.ws_url, reviewer, WATCH, variables) as replaying:
            replayed = await replaying.wait_for(2)
    assert [frame["kind"] for frame in live] == ["proposal.proposed", "task.created"]
    assert live == replayed


def _spawn_redis(port: int) -> subprocess.Popen[bytes]:
    binary = shutil.which("redis-server")
    assert binary is not None
    argv = [binary, "--port", str(port), "--save", "", "--appendonly", "no"]
    return subprocess.Popen(
        [*argv, "--bind", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


class ThrowawayRedis:
    """A private redis-server on a free port that a test may kill and restart."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        self.process = _spawn_redis(self.port)
        for _ in range(100):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            await writer.wait_closed()
            return
        raise RuntimeError("redis-server did not start")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
async def throwaway_redis() -> AsyncIterator[ThrowawayRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("needs redis-server")
    redis = ThrowawayRedis()
    await redis.start()
    yield redis
    redis.kill()


async def test_events_made_while_redis_is_down_arrive_once_it_is_back(
    serve: Serve, sessionmaker: SessionMaker, throwaway_redis: ThrowawayRedis
) -> None:
    env = {
        "SIGNOFF_REDIS_URL": throwaway_redis.url,
        "SIGNOFF_EVENTS_CHANNEL": unique_channel(),
        "SIGNOFF_EVENTS_RELAY_SECONDS": "0.3",
    }
    a, b = await serve(**env), await serve(**env)
    async with http_gql(b, sessionmaker) as through_b:
        world = await build_world(through_b)
        reviewer = world.reviewers[0]
        await feed_settled(sessionmaker)
        after = await head_cursor(through_b, reviewer)
        async with queue_subscription(a, reviewer, queue_id=world.queue_id, after=after) as on_a:
            await world.propose()
            await on_a.wait_for(2)
            throwaway_redis.kill()
            proposals = [await world.propose() for _ in range(5)]  # none of these may fail
            assert all(p["proposal"]["state"] == "APPROVAL_REQUIRED" for p in proposals)
            await asyncio.sleep(1.0)
            await throwaway_redis.start()
            events = await on_a.wait_for(12, within=20)
            events = await on_a.quiet(0.5)
    assert [e["kind"] for e in events] == ["proposal.proposed", "task.created"] * 6
    cursors = [decode_cursor(e["cursor"]) for e in events]
    assert cursors == sorted(set(cursors))
    ids = [e["entityId"] for e in events if e["kind"] == "proposal.proposed"]
    assert ids[1:] == [p["proposal"]["id"] for p in proposals]
    # The relay republishes what failed while Redis was down (after its grace period).
    for _ in range(100):
        async with sessionmaker() as session:
            unpublished = (
                await session.exec(
                    select(ChangeEvent.id).where(col(ChangeEvent.published_at).is_(None))
                )
            ).all()
        if not unpublished:
            break
        await asyncio.sleep(0.1)
    assert unpublished == []
