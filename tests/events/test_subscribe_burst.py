"""A burst of dashboards subscribing at once (a deploy, a network blip) costs the database
little: one token is read once for all its connections, a member's queue is not read,
and a subscription resuming at the head of the feed reads nothing back."""

from __future__ import annotations

import asyncio
import re

from httpx import AsyncClient
from starlette.applications import Starlette

from tests.helpers import GraphQLClient, statements_sent
from tests.live import (
    InProcessServer,
    Subscription,
    subscriptions_live,
    world_at_head,
)

DASHBOARDS = 20
SUBSCRIBE = """
subscription($q: ID, $a: String) {
  queueEvents(queueId: $q, after: $a) { cursor kind entityId }
}
"""


def matching(pattern: str, sent: list[str]) -> list[str]:
    return [s for s in sent if re.search(pattern, s)]


async def test_dashboards_subscribing_at_once_read_their_token_once_and_replay_nothing(
    app: Starlette, live: InProcessServer, gql: GraphQLClient
) -> None:
    async with AsyncClient(base_url=live.url, timeout=30) as client:
        world, after = await world_at_head(GraphQLClient(client, gql.sessionmaker))
        reviewer = world.reviewers[0]
        subscriptions = [
            Subscription(live.ws_url, reviewer, SUBSCRIBE, {"q": world.queue_id, "a": after})
            for _ in range(DASHBOARDS)
        ]
        with statements_sent(app) as sent:
            await asyncio.gather(*(s.__aenter__() for s in subscriptions))
            await subscriptions_live(app, DASHBOARDS)
        try:
            assert len(matching(r"\bapi_tokens\b", sent)) <= 1, "one token, read once"
            assert matching(r'\bFROM "?queues"?\b', sent) == [], "a member's queue: not read"
            # The replay reads the queue's events after the cursor (the hub's own catch-up,
            # which runs on its schedule, reads every queue's).
            replays = matching(r"change_events\.cursor > (.|\n)*change_events\.queue_id", sent)
            assert replays == [], "at the head: nothing to replay"
            proposed = (await world.propose())["proposal"]["id"]
            for subscription in subscriptions:
                events = await subscription.wait_for(2)
                assert [e["entityId"] for e in events][:1] == [proposed]
                assert [e["kind"] for e in events] == ["proposal.proposed", "task.created"]
        finally:
            await asyncio.gather(*(s.__aexit__() for s in subscriptions))
