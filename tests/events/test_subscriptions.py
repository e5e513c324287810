"""Subscriptions over real websockets against a real ``signoff serve`` process."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from signoff.database import SessionMaker
from tests.helpers import CLAIM, build_world
from tests.live import Server, feed_settled, head_cursor, http_gql, queue_subscription

Serve = Callable[..., Awaitable[Server]]


async def test_subscriber_sees_propose_claim_decide_in_order(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql)
        reviewer = world.reviewers[0]
        await feed_settled(sessionmaker)
        after = await head_cursor(gql, reviewer)
        async with queue_subscription(server, reviewer, queue_id=world.queue_id,
                                      after=after) as sub:
            proposed = await world.propose()
            await gql(CLAIM, {"id": proposed["task"]["id"]}, reviewer)
            await world.decide(reviewer, proposed["proposal"])
            events = await sub.wait_for(5)
    assert [e["kind"] for e in events] == [
        "proposal.proposed", "task.created", "task.claimed", "proposal.approved",
        "task.completed",
    ]
    cursors = [e["cursor"] for e in events]
    assert len(set(cursors)) == len(cursors)
    assert all(e["queueId"] == world.queue_id for e in events)
    assert events[3]["snapshot"]["state"] == "QUEUED"
    assert events[2]["actor"]["name"] == "reviewer-0"
