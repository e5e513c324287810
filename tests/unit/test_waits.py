"""The lean queue and flag uvicorn's connections get (``signoff.live.waits``): the
behaviour of ``asyncio.Queue`` and ``asyncio.Event`` that uvicorn relies on."""

from __future__ import annotations

import asyncio

import pytest

from signoff.live.waits import Flag, MessageQueue


async def test_a_queue_hands_items_over_in_order_to_getters_in_order() -> None:
    queue: MessageQueue[int] = MessageQueue()
    queue.put_nowait(1)
    assert not queue.empty() and queue.qsize() == 1
    assert await queue.get() == 1
    assert queue.empty()
    with pytest.raises(asyncio.QueueEmpty):
        queue.get_nowait()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.put_nowait(2)
    queue.put_nowait(3)
    assert await first == 2 and await second == 3
    assert queue._getters is None


async def test_a_getter_cancelled_after_being_woken_passes_the_item_on() -> None:
    queue: MessageQueue[int] = MessageQueue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.put_nowait(1)  # wakes the first getter ...
    first.cancel()  # ... which is cancelled before it runs
    assert await second == 1
    with pytest.raises(asyncio.CancelledError):
        await first
    assert queue.empty() and queue._getters is None


async def test_a_cancelled_getter_takes_nothing() -> None:
    queue: MessageQueue[int] = MessageQueue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    getter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await getter
    queue.put_nowait(1)
    assert queue.get_nowait() == 1


async def test_a_flag_wakes_every_waiter_when_set() -> None:
    flag = Flag(True)
    assert await flag.wait()
    flag.clear()
    assert not flag.is_set()
    waiters = [asyncio.create_task(flag.wait()) for _ in range(3)]
    await asyncio.sleep(0)
    assert not any(waiter.done() for waiter in waiters)
    flag.set()
    assert await asyncio.gather(*waiters) == [True, True, True]
    assert flag._waiters is None


async def test_a_wait_stepped_by_hand_and_closed_leaves_nothing_behind() -> None:
    """As ``live.websocket`` steps uvicorn's send once and closes it when it would wait."""
    flag = Flag(False)
    wait = flag.wait()
    assert wait.send(None) is not None  # suspended on its future
    wait.close()
    assert flag._waiters is None
