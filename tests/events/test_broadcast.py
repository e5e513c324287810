"""Broadcast groups: a frame is computed once per group of subscribers who would see the
same thing, and subscribers with different visibility never see each other's data."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from graphql import parse
from starlette.applications import Starlette

from signoff.clock import FrozenClock
from signoff.live.broadcast import Broadcaster
from signoff.live.selection import reads_viewer
from signoff.models import Role
from signoff.resolvers.core.work import Services, UnitOfWork
from signoff.resolvers.reach.deadlines import apply_deadlines
from signoff.schema import build_schema
from signoff.schema.context import Context, SharedViewerError
from tests.helpers import CLAIM, CREATE_QUEUE, GraphQLClient, build_world, create_tasks
from tests.live import InProcessServer, Subscription, feed_settled

ALL_QUEUES = """
subscription {
  queueEvents { cursor kind entityId queueId task { id state queue { slug } } }
}
"""

CLAIMED_BY_ME = """
subscription($q: ID) {
  queueEvents(queueId: $q) { kind entityId task { id state claimedByMe } }
}
"""


async def test_one_frame_per_group_and_each_viewer_sees_only_what_it_may(
    app: Starlette, live: InProcessServer, http: GraphQLClient
) -> None:
    world = await build_world(http, reviewers=2)
    slug_b, queue_b = await _second_queue(http, world.admin)
    bob = await http.token(Role.REVIEWER, name="bob", queues=[slug_b])
    ops = await http.token(Role.OPERATOR, name="ops")
    alice, carol = world.reviewers
    broadcaster = app.state.broadcaster

    subs = {
        name: Subscription(live.ws_url, token, ALL_QUEUES, {})
        for name, token in {
            "alice": alice,
            "carol": carol,
            "bob": bob,
            "ops": ops,
            "agent": world.agent,
        }.items()
    }
    await feed_settled(http.sessionmaker)
    for sub in subs.values():
        await sub.__aenter__()
    try:
        await _wait_for_groups(broadcaster, 3)
        await asyncio.sleep(0.3)  # let events of the set-up that are still in flight pass
        for sub in subs.values():
            sub.events.clear()
        before = broadcaster.executions
        in_a = await create_tasks(http, world.admin, world.queue_id, 3)
        in_b = await create_tasks(http, world.admin, queue_b, 2)
        for name, count in {"alice": 3, "carol": 3, "bob": 2, "ops": 5}.items():
            await subs[name].wait_for(count)
        with pytest.raises(AssertionError, match="FORBIDDEN"):
            await subs["agent"].wait_for(1, within=3)
        quiet = {name: list(sub.events) for name, sub in subs.items()}
        await asyncio.sleep(0.5)
    finally:
        for sub in subs.values():
            await sub.__aexit__(None, None, None)

    assert [e["entityId"] for e in quiet["alice"]] == in_a
    assert quiet["carol"] == quiet["alice"]  # the same frames, from one execution
    assert [e["entityId"] for e in quiet["bob"]] == in_b
    assert {e["task"]["queue"]["slug"] for e in quiet["bob"]} == {slug_b}
    assert [e["entityId"] for e in quiet["ops"]] == in_a + in_b
    assert {name: len(sub.events) for name, sub in subs.items()} == {
        "alice": 3,
        "carol": 3,
        "bob": 2,
        "ops": 5,
        "agent": 0,
    }
    # Groups: alice+carol (queue A), bob (queue B), ops (everything). Each event of A is
    # computed for two groups, each of B for two: 10, where one per subscriber would be 13.
    assert broadcaster.executions - before == 10


async def test_a_field_that_reads_the_viewer_is_computed_per_viewer(
    app: Starlette, live: InProcessServer, http: GraphQLClient
) -> None:
    world = await build_world(http, reviewers=2)
    alice, carol = world.reviewers
    broadcaster = app.state.broadcaster
    variables = {"q": world.queue_id}
    await feed_settled(http.sessionmaker)
    async with (
        Subscription(live.ws_url, alice, CLAIMED_BY_ME, variables) as mine,
        Subscription(live.ws_url, carol, CLAIMED_BY_ME, variables) as theirs,
    ):
        await _wait_for_groups(broadcaster, 2)
        await asyncio.sleep(0.3)
        mine.events.clear()
        theirs.events.clear()
        [task_id] = await create_tasks(http, world.admin, world.queue_id, 1)
        # Frames show the task as it is when they are computed: claim after the first.
        await mine.wait_for(1)
        await theirs.wait_for(1)
        await http(CLAIM, {"id": task_id}, alice)
        await mine.wait_for(2)
        await theirs.wait_for(2)
    assert [e["task"]["claimedByMe"] for e in mine.events] == [False, True]
    assert [e["task"]["claimedByMe"] for e in theirs.events] == [False, False]


def test_documents_that_read_the_viewer_are_recognised_through_fragments() -> None:
    schema = build_schema()._schema
    plain = parse("subscription { queueEvents { cursor task { id state } } }")
    direct = parse("subscription { queueEvents { task { claimedByMe } } }")
    via_fragment = parse(
        "subscription { queueEvents { ...E } } "
        "fragment E on ChangeEvent { task { ...T } } fragment T on HumanTask { claimedByMe }"
    )
    assert not reads_viewer(schema, plain)
    assert reads_viewer(schema, direct)
    assert reads_viewer(schema, via_fragment)


async def test_a_shared_frame_cannot_read_a_viewer(app: Starlette) -> None:
    context = Context(sessionmaker=app.state.sessionmaker, token=None, shared_viewer=True)
    with pytest.raises(SharedViewerError):
        await context.viewer()


async def _second_queue(http: GraphQLClient, admin: str) -> tuple[str, str]:
    slug = f"q-{uuid.uuid4().hex[:8]}"
    data = await http(CREATE_QUEUE, {"input": {"slug": slug, "name": "B"}}, admin)
    return slug, data["createQueue"]["id"]


async def _wait_for_groups(broadcaster: Broadcaster, count: int, within: float = 10) -> None:
    """Subscriptions join their groups asynchronously after `subscribe` is sent."""
    deadline = asyncio.get_running_loop().time() + within
    while broadcaster.group_count < count:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"expected {count} groups, have {broadcaster.group_count}")
        await asyncio.sleep(0.02)


MEMBER = "mutation($input: QueueMemberInput!) { %s(input: $input) { id } }"


async def test_a_membership_change_moves_a_subscriber_to_the_group_it_now_belongs_to(
    app: Starlette, live: InProcessServer, http: GraphQLClient
) -> None:
    """Alice, reviewer of A and B, loses A: her all-queues subscription keeps B's events and
    stops A's at once, while Carol, who shared her group, keeps both."""
    world = await build_world(http, reviewers=2)
    slug_b, queue_b = await _second_queue(http, world.admin)
    alice = await http.token(Role.REVIEWER, name="reviewer-0", queues=[slug_b])
    carol = await http.token(Role.REVIEWER, name="reviewer-1", queues=[slug_b])
    alice_id = (await http("query { viewer { actor { id } } }", token=alice))["viewer"]["actor"][
        "id"
    ]
    broadcaster = app.state.broadcaster
    await feed_settled(http.sessionmaker)
    async with (
        Subscription(live.ws_url, alice, ALL_QUEUES, {}) as hers,
        Subscription(live.ws_url, carol, ALL_QUEUES, {}) as theirs,
    ):
        await _wait_for_groups(broadcaster, 1)
        await asyncio.sleep(0.3)
        hers.events.clear()
        theirs.events.clear()
        seen = await create_tasks(http, world.admin, world.queue_id, 1)
        await hers.wait_for(1)
        await http(
            MEMBER % "removeQueueMember",
            {"input": {"queueId": world.queue_id, "actorId": alice_id}},
            world.admin,
        )
        hidden = await create_tasks(http, world.admin, world.queue_id, 2)
        in_b = await create_tasks(http, world.admin, queue_b, 2)
        await theirs.wait_for(6)  # task 1, the removal (queue A's event), 2 in A, 2 in B
        await hers.wait_for(3)
        await asyncio.sleep(0.5)
    task_ids = [e["entityId"] for e in hers.events if e["kind"] == "task.created"]
    assert task_ids == seen + in_b
    assert not set(hidden) & {e["entityId"] for e in hers.events}
    assert [e["entityId"] for e in theirs.events if e["kind"] == "task.created"] == (
        seen + hidden + in_b
    )
    assert hers.error is None  # the subscription went on


async def test_a_subscription_without_after_replays_no_history_when_it_changes_groups(
    app: Starlette, live: InProcessServer, http: GraphQLClient
) -> None:
    """A subscription opened without ``after`` starts at the head of the feed: when its
    viewer's memberships change before it received anything, it rejoins from there, not
    from the beginning of the feed."""
    world = await build_world(http, reviewers=1)
    slug_b, queue_b = await _second_queue(http, world.admin)
    before = await create_tasks(http, world.admin, queue_b, 2)
    alice = await http.token(Role.REVIEWER, name="reviewer-0", queues=[slug_b])
    alice_id = (await http("query { viewer { actor { id } } }", token=alice))["viewer"]["actor"][
        "id"
    ]
    await feed_settled(http.sessionmaker)
    async with Subscription(live.ws_url, alice, ALL_QUEUES, {}) as hers:
        await _wait_for_groups(app.state.broadcaster, 1)
        await asyncio.sleep(0.3)
        await http(
            MEMBER % "removeQueueMember",
            {"input": {"queueId": world.queue_id, "actorId": alice_id}},
            world.admin,
        )
        after = await create_tasks(http, world.admin, queue_b, 1)
        await hers.wait_for(1)
        await asyncio.sleep(0.5)
    created = [e["entityId"] for e in hers.events if e["kind"] == "task.created"]
    assert not set(before) & set(created)
    assert created == after
    assert hers.error is None


LEAVING = """
subscription {
  queueEvents { kind entityType entityId queueId task { id queue { slug } } proposal { id } }
}
"""


async def test_the_queue_an_escalation_leaves_sees_it_go_and_nothing_of_where_it_went(
    app: Starlette, live: InProcessServer, http: GraphQLClient, frozen_clock: FrozenClock
) -> None:
    admin = await http.token(Role.ADMIN, name="chain-admin")
    slug_b, queue_b = await _second_queue(http, admin)
    policy = {"action": "ESCALATE", "escalation": [{"queueId": queue_b, "deadlineSeconds": 600}]}
    world = await build_world(http, deadlinePolicy=policy)
    bob = await http.token(Role.REVIEWER, name="bob", queues=[slug_b])
    proposed = await world.propose(expiresInSeconds=60)
    task_id = proposed["task"]["id"]
    await feed_settled(http.sessionmaker)
    async with (
        Subscription(live.ws_url, world.reviewers[0], LEAVING, {}) as alice,
        Subscription(live.ws_url, bob, LEAVING, {}) as in_b,
    ):
        await _wait_for_groups(app.state.broadcaster, 2)
        frozen_clock.advance(61)
        async with http.sessionmaker() as session:
            work = UnitOfWork(session, Services(events=app.state.events))
            assert await apply_deadlines(work) == [proposed["proposal"]["id"]]
            await work.commit()
        left = await alice.wait_for(2)
        arrived = await in_b.wait_for(2)

    # Queue A's reviewer learns that both left A, and sees neither as it is now, in B.
    assert {(e["kind"], e["queueId"]) for e in left} == {
        ("proposal.escalated", world.queue_id),
        ("task.escalated", world.queue_id),
    }
    assert all(e["task"] is None and e["proposal"] is None for e in left)
    # Queue B's reviewer sees them arrive, as they are now.
    escalated = next(e for e in arrived if e["kind"] == "task.escalated")
    assert escalated["queueId"] == queue_b
    assert escalated["task"] == {"id": task_id, "queue": {"slug": slug_b}}
    assert {e["queueId"] for e in arrived} == {queue_b}
