"""Every cache of the live path has a bound, and evicts at it: selections, frame logs (per
group and for the process), framed copies of a payload, the feed's shared bounds and the
viewers of an actor whose access changed."""

from __future__ import annotations

import asyncio
from typing import Any

from graphql import parse, print_ast

from signoff.live.history import Budget, FrameLog
from signoff.live.prepared_frames import FRAMED_OPENINGS, Payload
from signoff.live.selection import Bounded, _strip
from signoff.models import Actor, Role
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.access.viewer_cache import ViewerCache
from signoff.resolvers.feed.subscriptions import FeedBounds, SharedFeedBounds


def test_bounded_forgets_the_least_recently_used() -> None:
    made: list[str] = []

    def make(key: str) -> str:
        made.append(key)
        return key.upper()

    cache: Bounded[str, str] = Bounded(2)
    cache.get_or_make("a", lambda: make("a"))
    cache.get_or_make("b", lambda: make("b"))
    cache.get_or_make("a", lambda: make("a"))  # used again: "b" is now the oldest
    cache.get_or_make("c", lambda: make("c"))
    assert len(cache) == 2
    cache.get_or_make("a", lambda: make("a"))
    cache.get_or_make("b", lambda: make("b"))
    assert made == ["a", "b", "c", "b"]


def _stripped(query: str) -> tuple[str, frozenset[str]]:
    document = parse(query)
    operation = document.definitions[0]
    root = operation.selection_set.selections[0]  # type: ignore[attr-defined]
    stripped = _strip(operation, {}, [root])  # type: ignore[arg-type]
    return stripped.query, stripped.variable_names


def test_after_is_left_out_of_what_keys_a_group() -> None:
    by_variable = _stripped(
        "subscription($q: ID, $a: String) { queueEvents(queueId: $q, after: $a) { cursor } }"
    )
    written_in = _stripped(
        'subscription($q: ID) { queueEvents(queueId: $q, after: "x") { cursor } }'
    )
    other = _stripped('subscription($q: ID) { queueEvents(queueId: $q, after: "y") { cursor } }')
    assert by_variable == written_in == other
    assert by_variable[1] == {"q"}
    assert "after" not in by_variable[0]
    # Everything else stays: another selection is another group.
    assert _stripped("subscription { queueEvents(after: $a) { kind } }")[0] != by_variable[0]
    assert print_ast(parse(by_variable[0]))  # still a document


def test_a_group_log_keeps_its_newest_frames() -> None:
    budget = Budget(10**9)
    log = FrameLog(since=10, size=3, budget=budget)
    for cursor in (11, 13, 14, 16):
        log.append(cursor, Payload(f"{cursor}"))
    assert log.since == 11  # 11 went, the others are complete after it
    assert [c for c, _ in log.after(11, 10)] == [13, 14, 16]
    assert [c for c, _ in log.after(13, 1)] == [14]
    log.clear()
    assert budget.used == 0 and len(log) == 0


def test_read_back_frames_join_the_log_only_where_they_fit() -> None:
    budget = Budget(10**9)
    log = FrameLog(since=20, size=4, budget=budget)
    log.append(21, Payload("21"))
    assert log.fits(3, 0) and not log.fits(4, 0)
    log.prepend(15, [(17, Payload("17")), (19, Payload("19"))])
    assert log.since == 15
    assert [c for c, _ in log.after(15, 10)] == [17, 19, 21]


def test_every_log_of_a_process_shares_one_byte_budget() -> None:
    frame = Payload("x" * 100)
    budget = Budget(frame.size * 5)
    first = FrameLog(since=0, size=100, budget=budget)
    second = FrameLog(since=0, size=100, budget=budget)
    for cursor in range(1, 5):
        first.append(cursor, Payload("x" * 100))
    for cursor in range(5, 8):
        second.append(cursor, Payload("x" * 100))
    # Over the budget, the log that grew gave up its own oldest frames.
    assert budget.used <= budget.limit
    assert len(first) == 4 and len(second) == 1 and second.since == 6
    assert not second.fits(1, frame.size)
    first.clear()
    assert budget.used == frame.size


def test_a_payload_keeps_few_framed_copies() -> None:
    payload = Payload('{"data":{}}')
    openings = [f'{{"id":"{n}","type":"next","payload":' for n in range(10)]
    frames = [payload.framed(opening) for opening in openings]
    assert len(payload._framed) == FRAMED_OPENINGS
    assert frames == [Payload('{"data":{}}').framed(opening) for opening in openings]


async def test_resumes_at_one_moment_share_one_read_of_the_feed_bounds() -> None:
    reads = 0
    last = 100

    async def read() -> FeedBounds:
        nonlocal reads
        reads += 1
        await asyncio.sleep(0.01)
        return FeedBounds(last_cursor=last, pruned_through=5)

    now = [0.0]
    bounds = SharedFeedBounds(read, seconds=1.0, clock=lambda: now[0])
    answers = await asyncio.gather(*(bounds.covering(50) for _ in range(100)))
    assert reads == 1 and {a.last_cursor for a in answers} == {100}
    await bounds.covering(90)
    assert reads == 1  # kept for a second
    last = 120
    assert (await bounds.covering(110)).last_cursor == 120  # newer than kept: read again
    assert reads == 2
    now[0] = 2.0
    await bounds.covering(10)
    assert reads == 3  # too old


async def test_the_viewers_of_an_actor_whose_access_changed_are_read_again() -> None:
    cache = ViewerCache(60)
    alice = Viewer(actor=Actor(id="a", name="alice", role=Role.REVIEWER), queue_ids=frozenset())
    bob = Viewer(actor=Actor(id="b", name="bob", role=Role.REVIEWER), queue_ids=frozenset())
    reads: list[str] = []

    def reader(viewer: Viewer, token: str) -> Any:
        async def read() -> Viewer:
            reads.append(token)
            return viewer

        return read

    for token, viewer in (("a1", alice), ("a2", alice), ("b1", bob)):
        await cache.viewer(token, reader(viewer, token))
    cache.forget_actor("a")
    for token, viewer in (("a1", alice), ("a2", alice), ("b1", bob)):
        await cache.viewer(token, reader(viewer, token))
    assert reads == ["a1", "a2", "b1", "a1", "a2"]
