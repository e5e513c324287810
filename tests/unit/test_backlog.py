"""A subscriber's backlog is bounded in frames and in bytes (signoff/live/backlog.py)."""

from __future__ import annotations

import asyncio

from signoff.live.backlog import Backlog


def test_the_byte_bound_stops_large_frames_before_the_frame_bound() -> None:
    backlog = Backlog(frame_limit=100, byte_limit=100_000)
    for _ in range(2):
        assert backlog.admits(40_000)
        backlog.add(40_000)
    assert not backlog.admits(40_000)  # 120 KB would wait: past the byte bound
    assert backlog.admits(20_000)


def test_the_frame_bound_still_holds_for_small_frames() -> None:
    backlog = Backlog(frame_limit=3, byte_limit=1_000_000)
    for _ in range(3):
        assert backlog.admits(10)
        backlog.add(10)
    assert not backlog.admits(10)


def test_a_frame_larger_than_the_bound_still_reaches_a_client_that_reads() -> None:
    backlog = Backlog(frame_limit=10, byte_limit=1_000)
    assert backlog.admits(5_000)  # nothing waits: it goes
    backlog.add(5_000)
    assert not backlog.admits(1)
    backlog.remove(5_000)
    assert backlog.admits(5_000)


async def test_a_replay_waits_until_the_bytes_fall_below_half() -> None:
    backlog = Backlog(frame_limit=100, byte_limit=1_000)
    backlog.add(600)  # past half of the bytes, far from half of the frames
    waiting = asyncio.create_task(backlog.wait_for_room(lambda: False))
    await asyncio.sleep(0)
    assert not waiting.done()
    backlog.remove(600)
    await asyncio.wait_for(waiting, 1)
