"""The one keep-alive timer of a process's websockets (``signoff.live.keepalive``)."""

from __future__ import annotations

import asyncio

from signoff.live.keepalive import SLOTS, KeepAlive

PERIOD = 0.64  # a visit every 10 ms: small against a loaded loop's overshoot


class Socket:
    def __init__(self, visits: int | None = None) -> None:
        self.beats: list[float] = []
        self.added = 0.0
        self.visits = visits  # None: wants visits for ever
        self.thrice = asyncio.Event()  # visited three times

    def beat(self) -> bool:
        self.beats.append(asyncio.get_running_loop().time())
        if len(self.beats) == 3:
            self.thrice.set()
        return self.visits is None or len(self.beats) < self.visits


async def test_each_socket_is_visited_once_per_period_by_one_task() -> None:
    timer = KeepAlive(PERIOD)
    sockets = [Socket() for _ in range(3)]
    tasks_before = len(asyncio.all_tasks())
    for socket in sockets:
        socket.added = asyncio.get_running_loop().time()
        timer.add(socket)
        await asyncio.sleep(PERIOD / 8)
    assert len(asyncio.all_tasks()) == tasks_before + 1
    # Three visits each, waited for rather than slept for: a loaded machine makes every
    # slot's sleep overshoot, so visits come later than a period, never sooner.
    async with asyncio.timeout(PERIOD * 30):
        for socket in sockets:
            await socket.thrice.wait()
    assert len(asyncio.all_tasks()) == tasks_before + 1
    for socket in sockets:
        gaps = [b - a for a, b in zip(socket.beats, socket.beats[1:], strict=False)]
        assert all(gap >= PERIOD * 0.9 for gap in gaps), gaps
        assert socket.beats[0] - socket.added >= PERIOD * (SLOTS - 1) / SLOTS * 0.9
    for socket in sockets:
        timer.discard(socket)
    assert len(timer) == 0


async def test_a_socket_that_declines_is_visited_no_more_and_the_timer_ends_when_empty() -> None:
    timer = KeepAlive(PERIOD / 2)
    socket = Socket(visits=2)
    timer.add(socket)
    await asyncio.sleep(PERIOD * 3)
    assert len(socket.beats) == 2
    assert len(timer) == 0
    await asyncio.sleep(PERIOD)
    assert timer._task is not None and timer._task.done()
    timer.add(socket)  # a timer that ended starts again with its next socket
    assert not timer._task.done()
    timer.discard(socket)
