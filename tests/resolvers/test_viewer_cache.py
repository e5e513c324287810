"""The token -> viewer cache: what it keeps, for how long, and what it never keeps."""

from __future__ import annotations

import asyncio

import pytest

from signoff.errors import Unauthenticated
from signoff.models import Actor, Role
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.access.viewer_cache import ViewerCache


class Reads:
    """A viewer read that counts its calls; ``valid`` False makes it refuse the token."""

    def __init__(self) -> None:
        self.count = 0
        self.valid = True
        self.queues: frozenset[str] = frozenset({"q-1"})

    async def __call__(self) -> Viewer:
        self.count += 1
        if not self.valid:
            raise Unauthenticated("The API token is not valid.")
        return Viewer(
            actor=Actor(id="a-1", name="alice", role=Role.REVIEWER), queue_ids=self.queues
        )


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_a_viewer_is_read_once_per_period_then_again() -> None:
    clock, read = Clock(), Reads()
    cache = ViewerCache(2.0, clock=clock)
    first = await cache.viewer("t", read)
    read.queues = frozenset({"q-1", "q-2"})
    clock.now += 1.9
    assert await cache.viewer("t", read) is first
    assert read.count == 1
    clock.now += 0.1
    again = await cache.viewer("t", read)
    assert read.count == 2
    assert again.queue_ids == {"q-1", "q-2"}


async def test_a_revoked_token_is_refused_once_its_period_is_over() -> None:
    clock, read = Clock(), Reads()
    cache = ViewerCache(2.0, clock=clock)
    await cache.viewer("t", read)
    read.valid = False
    clock.now += 2.0
    with pytest.raises(Unauthenticated):
        await cache.viewer("t", read)
    with pytest.raises(Unauthenticated):  # a refusal is not kept either way
        await cache.viewer("t", read)
    assert read.count == 3


async def test_a_refused_token_is_read_again_at_once() -> None:
    """A token created a moment after a refused try works on the next request."""
    read = Reads()
    read.valid = False
    cache = ViewerCache(2.0, clock=Clock())
    with pytest.raises(Unauthenticated):
        await cache.viewer("t", read)
    read.valid = True
    assert (await cache.viewer("t", read)).actor.name == "alice"
    assert read.count == 2


async def test_fresh_reads_now_and_clear_forgets_everything() -> None:
    read = Reads()
    cache = ViewerCache(2.0, clock=Clock())
    await cache.viewer("t", read)
    await cache.viewer("t", read, fresh=True)
    assert read.count == 2
    cache.clear()
    await cache.viewer("t", read)
    assert read.count == 3


async def test_zero_seconds_reads_every_time() -> None:
    read = Reads()
    cache = ViewerCache(0, clock=Clock())
    for _ in range(3):
        await cache.viewer("t", read)
    assert read.count == 3


async def test_past_its_size_the_cache_starts_over() -> None:
    read = Reads()
    cache = ViewerCache(60, size=2, clock=Clock())
    for token in ("a", "b", "c", "a"):
        await cache.viewer(token, read)
    assert read.count == 4  # "c" found the cache full and emptied it, so "a" was read again


async def test_lookups_that_miss_together_share_one_read() -> None:
    read = Reads()
    cache = ViewerCache(2.0, clock=Clock())
    viewers = await asyncio.gather(*(cache.viewer("t", read) for _ in range(50)))
    assert read.count == 1 and all(v is viewers[0] for v in viewers)


async def test_a_shared_refusal_refuses_everyone_and_is_not_kept() -> None:
    read = Reads()
    read.valid = False
    cache = ViewerCache(2.0, clock=Clock())
    refused = await asyncio.gather(
        *(cache.viewer("t", read) for _ in range(5)), return_exceptions=True
    )
    assert read.count == 1 and all(isinstance(r, Unauthenticated) for r in refused)
    read.valid = True
    assert (await cache.viewer("t", read)).actor.name == "alice"


async def test_one_waiter_cancelled_does_not_cancel_the_read_for_the_others() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    read = Reads()

    async def slow() -> Viewer:
        started.set()
        await release.wait()
        return await read()

    cache = ViewerCache(2.0, clock=Clock())
    first = asyncio.create_task(cache.viewer("t", slow))
    await started.wait()
    second = asyncio.create_task(cache.viewer("t", slow))
    await asyncio.sleep(0)
    first.cancel()
    release.set()
    assert (await second).actor.name == "alice"
    assert first.cancelled() and read.count == 1


async def test_a_read_under_way_when_cleared_is_not_kept() -> None:
    release = asyncio.Event()
    read = Reads()

    async def slow() -> Viewer:
        await release.wait()
        return await read()

    cache = ViewerCache(2.0, clock=Clock())
    pending = asyncio.create_task(cache.viewer("t", slow))
    await asyncio.sleep(0)
    cache.clear()  # a membership changed while the read was under way
    release.set()
    await pending
    await cache.viewer("t", read)
    assert read.count == 2
