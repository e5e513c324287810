"""Resuming after a restart: subscribers that resume after different cursors catch up
from their group's shared log and then share one execution per event; a storm of them
reads the feed and the tokens a handful of times, not once per socket."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator

import pytest
from sqlmodel import col, select
from starlette.applications import Starlette

from signoff.config import LIVE_LIMIT_FIELDS, Settings
from signoff.models import ChangeEvent
from signoff.resolvers.feed.subscriptions import decode_cursor, encode_cursor
from tests.helpers import GraphQLClient, build_world, create_tasks, statements_sent
from tests.live import InProcessServer, Stream, feed_settled, open_stream

SUBSCRIBERS = 1000
CURSORS = 50
LIVE_EVENTS = 5


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """A fleet of a thousand consoles sharing one reviewer's token, as a wall of dashboards
    would: the live bounds per token and actor are set off for it. The token cache holds
    for the whole storm, which on a loaded machine outlasts the default two seconds: the
    count of token reads below is per socket or per storm, not per cache window."""
    limits = dict.fromkeys(LIVE_LIMIT_FIELDS, 0)
    return dataclasses.replace(settings, auth_cache_seconds=120.0, **limits)


RESUME = """
subscription($q: ID, $after: String) {
  queueEvents(queueId: $q, after: $after) { cursor kind entityId task { id state } }
}
"""


async def test_a_thousand_resuming_after_fifty_cursors_share_each_execution(
    app: Starlette, live: InProcessServer, http: GraphQLClient
) -> None:
    world = await build_world(http)
    reviewer = world.reviewers[0]
    await create_tasks(http, world.admin, world.queue_id, CURSORS * 2, "history")
    await feed_settled(http.sessionmaker)
    history = await _queue_cursors(http, world.queue_id)
    # Fifty cursors spread over the history: consoles that were away for different spans.
    resume_after = history[: CURSORS * 2 : 2]
    broadcaster = app.state.broadcaster

    with statements_sent(app, _reads_feed_or_tokens) as reads:
        async with _streams(live, reviewer, world.queue_id, resume_after) as streams:
            for stream, after in zip(streams, _cycle(resume_after), strict=False):
                missed = len([c for c in history if c > after])
                await stream.until(lambda s, n=missed: len(s.frames) >= n or s.ended, within=60)
            storm_reads = list(reads)
            before = broadcaster.executions
            targets = [len(stream.frames) + LIVE_EVENTS for stream in streams]
            await create_tasks(http, world.admin, world.queue_id, LIVE_EVENTS, "live")
            for stream, target in zip(streams, targets, strict=True):
                await stream.until(lambda s, n=target: len(s.frames) >= n or s.ended, within=60)
            executions = broadcaster.executions - before
            ended = [(s.errors[:1], s.close_code, s.completed) for s in streams if s.ended]
            assert not ended, (len(ended), ended[:3])
            assert broadcaster.group_count == 1

    for stream, after in zip(streams, _cycle(resume_after), strict=False):
        assert not stream.errors
        cursors = [_cursor_of(frame) for frame in stream.frames]
        expected = [c for c in history if c > after]
        assert cursors[: len(expected)] == expected  # every missed event once, in order
        assert len(cursors) == len(expected) + LIVE_EVENTS
        assert cursors == sorted(set(cursors))
    # One execution per live event for all thousand, once they have caught up.
    assert executions == LIVE_EVENTS
    # The storm read the feed only for the log's read-backs (at most one page per distinct
    # cursor, far fewer as the lowest cursors come early; the event service's timed upkeep
    # aside, which reads whatever the subscribers do), the feed's bounds a few times
    # for a thousand resumes, and the token at connection_init once for the lot.
    feed_reads = [s for s in storm_reads if "change_events" in s and not _upkeep(s)]
    bounds_reads = [s for s in storm_reads if "change_feed_state" in s]
    token_reads = [s for s in storm_reads if "api_tokens" in s]
    assert len(feed_reads) <= CURSORS, len(feed_reads)
    assert len(bounds_reads) <= CURSORS, len(bounds_reads)
    assert len(token_reads) <= 2, len(token_reads)


def _reads_feed_or_tokens(statement: str) -> bool:
    text = statement.lower()
    return text.lstrip().startswith("select") and (
        "change_events" in text or "api_tokens" in text or "change_feed_state" in text
    )


def _upkeep(statement: str) -> bool:
    """The event service's timed look for events still to stamp or publish: it runs every
    few seconds whatever the subscribers do, so a storm slowed by a loaded machine would
    count more of them (35 feed statements at rest were 14 read-backs and 21 of these)."""
    text = statement.lower()
    return "cursor is null" in text or "published_at is null" in text


def _cycle(cursors: list[int]) -> list[int]:
    return [cursors[i % len(cursors)] for i in range(SUBSCRIBERS)]


def _cursor_of(frame: dict[str, object]) -> int:
    data = frame["data"]
    assert isinstance(data, dict)
    return decode_cursor(data["queueEvents"]["cursor"])


async def _queue_cursors(http: GraphQLClient, queue_id: str) -> list[int]:
    """The queue's events' cursors, oldest first."""
    async with http.sessionmaker() as session:
        rows = (
            await session.exec(
                select(ChangeEvent.cursor)
                .where(ChangeEvent.queue_id == queue_id)
                .order_by(col(ChangeEvent.cursor))
            )
        ).all()
    return [cursor for cursor in rows if cursor is not None]


@contextlib.asynccontextmanager
async def _streams(
    live: InProcessServer, token: str, queue_id: str, cursors: list[int]
) -> AsyncIterator[list[Stream]]:
    """A thousand sockets resuming at once, each after one of ``cursors`` in turn."""
    async with contextlib.AsyncExitStack() as stack:
        opened = await asyncio.gather(
            *(
                stack.enter_async_context(
                    open_stream(live, token, RESUME, {"q": queue_id, "after": encode_cursor(after)})
                )
                for after in _cycle(cursors)
            )
        )
        yield list(opened)
