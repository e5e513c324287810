"""The turnstile's rest after a busy turn of the loop (``live.turnstile``), on asyncio and on
uvloop (``signoff serve``'s loop), whose timers count whole milliseconds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from signoff.live.turnstile import Turnstile
from tests.live import ON_EITHER_LOOP, run_on

LoopFactory = Callable[[], asyncio.AbstractEventLoop]


@ON_EITHER_LOOP
def test_after_a_busy_turn_those_waiting_rest(loop_factory: LoopFactory) -> None:
    run_on(loop_factory, _rests())


@ON_EITHER_LOOP
def test_on_a_quiet_loop_those_waiting_go_on_a_turn_each(loop_factory: LoopFactory) -> None:
    run_on(loop_factory, _turn_by_turn())


async def _rests() -> None:
    turnstile = Turnstile(1, busy=0.005, rest=2)
    assert turnstile.wait() is None  # goes on in this turn
    waiter = turnstile.wait()
    assert waiter is not None
    time.sleep(0.03)  # noqa: ASYNC251  # a busy turn: the next comes 30 ms after it was asked
    started = time.perf_counter()
    await waiter
    assert time.perf_counter() - started >= 0.05  # twice that, to the timer's millisecond


async def _turn_by_turn() -> None:
    turnstile = Turnstile(1, busy=1.0, rest=2)
    assert turnstile.wait() is None
    waiters = [turnstile.wait() for _ in range(3)]
    for done in range(1, 4):
        await asyncio.sleep(0)  # one turn of the loop
        assert [w is not None and w.done() for w in waiters] == [i < done for i in range(3)]
