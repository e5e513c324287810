"""Memory is reclaimed once many live connections (websockets and event streams) ended at
once, after the burst, and at most once per interval; connections that come and go among
many open ones never cause it."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any, cast

from starlette.types import Message

from signoff.live.reclaim import MemoryReclaim, malloc_trim
from signoff.live.sse import EventStream, EventStreams


class Calls:
    def __init__(self) -> None:
        self.collects = 0
        self.trims = 0

    def collect(self) -> int:
        self.collects += 1
        return 0

    def trim(self) -> int:
        self.trims += 1
        return 1


def _reclaim(calls: Calls, **kwargs: float) -> MemoryReclaim:
    options = {"min_ended": 4, "delay": 0.01, "interval": 0.2, **kwargs}
    return MemoryReclaim(
        min_ended=int(options["min_ended"]),
        delay=options["delay"],
        interval=options["interval"],
        collect=calls.collect,
        trim=calls.trim,
    )


def _open_then_end(reclaim: MemoryReclaim, count: int) -> None:
    for _ in range(count):
        reclaim.opened()
    for _ in range(count):
        reclaim.closed()


async def test_a_storm_that_ends_is_reclaimed_once_after_its_burst() -> None:
    calls = Calls()
    reclaim = _reclaim(calls)
    _open_then_end(reclaim, 10)
    assert calls.collects == 0  # not in the middle of the burst
    await asyncio.sleep(0.05)
    assert (calls.collects, calls.trims, reclaim.reclaims) == (1, 1, 1)
    assert reclaim.open == 0


async def test_a_second_storm_within_the_interval_waits_for_it() -> None:
    calls = Calls()
    reclaim = _reclaim(calls)
    _open_then_end(reclaim, 10)
    await asyncio.sleep(0.05)
    _open_then_end(reclaim, 10)
    _open_then_end(reclaim, 10)
    await asyncio.sleep(0.05)
    assert calls.collects == 1
    await asyncio.sleep(0.2)
    assert calls.collects == 2


async def test_few_ended_among_many_open_cause_no_reclaim() -> None:
    calls = Calls()
    reclaim = _reclaim(calls)
    for _ in range(20):
        reclaim.opened()
    _open_then_end(reclaim, 19)  # fewer than are still open
    await asyncio.sleep(0.05)
    assert calls.collects == 0
    for _ in range(20):
        reclaim.closed()
    await asyncio.sleep(0.05)
    assert calls.collects == 1


async def test_the_reclaim_frees_what_ended_connections_left_in_cycles() -> None:
    class Protocol:  # as uvicorn's: the protocol and its parts refer to each other
        def __init__(self) -> None:
            self.parts = [self]

    gc.collect()
    gc.disable()  # only the reclaim may collect here
    try:
        left = [weakref.ref(Protocol()) for _ in range(100)]
        assert all(ref() is not None for ref in left)
        reclaim = MemoryReclaim(min_ended=1, delay=0.0, trim=malloc_trim())
        _open_then_end(reclaim, 1)
        await asyncio.sleep(0.01)
        assert reclaim.reclaims == 1
        assert all(ref() is None for ref in left)
    finally:
        gc.enable()


async def test_an_event_stream_counts_until_its_client_goes() -> None:
    calls = Calls()
    reclaim = _reclaim(calls, min_ended=1)
    streams = EventStreams(
        cast(Any, None),
        None,
        authenticate=cast(Any, None),
        make_context=cast(Any, None),
        frame_limit=4,
        byte_limit=1024,
        heartbeat_seconds=0,
        max_operations=1,
        reclaim=reclaim,
    )
    gone = asyncio.Event()
    sent: list[Message] = []

    async def receive() -> Message:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    stream = EventStream(frame_limit=4, byte_limit=1024, single=True, token="t")
    answering = asyncio.create_task(streams._answer(stream, receive, send, None))
    await asyncio.sleep(0.01)
    assert (reclaim.open, sent[0]["status"]) == (1, 200)
    gone.set()
    await answering
    assert reclaim.open == 0
    await asyncio.sleep(0.05)
    assert calls.collects == 1


def test_glibc_has_malloc_trim() -> None:
    # The servers run on glibc (the image and CI): the pages are given back there.
    trim = malloc_trim()
    assert trim is not None
    assert trim() in (0, 1)
