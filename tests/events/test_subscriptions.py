"""Subscriptions over real websockets against a real ``signoff serve`` process."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta

import pytest

from signoff import clock
from signoff.database import SessionMaker
from signoff.events import feed
from signoff.models import ChangeKind, Role
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.feed.subscriptions import decode_cursor, encode_cursor
from tests.conftest import ModuleServer
from tests.helpers import (
    CLAIM,
    build_world,
    create_tasks,
    record_event,
    revoke_by_hand,
    unique_name,
)
from tests.live import (
    PROPOSAL_RELATIONS,
    QUEUE_EVENTS,
    Server,
    Subscription,
    feed_settled,
    head_cursor,
    http_gql,
    open_stream,
    queue_subscription,
)

Serve = Callable[..., Awaitable[Server]]


async def test_subscriber_sees_propose_claim_decide_in_order(module_server: ModuleServer) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    names = unique_name("reviewer")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewer_names=names)
        reviewer = world.reviewers[0]
        await feed_settled(sessionmaker)
        after = await head_cursor(gql, reviewer)
        async with queue_subscription(
            server, reviewer, queue_id=world.queue_id, after=after
        ) as sub:
            proposed = await world.propose()
            await gql(CLAIM, {"id": proposed["task"]["id"]}, reviewer)
            await world.decide(reviewer, proposed["proposal"])
            events = await sub.wait_for(5)
    assert [e["kind"] for e in events] == [
        "proposal.proposed",
        "task.created",
        "task.claimed",
        "proposal.approved",
        "task.completed",
    ]
    cursors = [decode_cursor(e["cursor"]) for e in events]
    assert cursors == sorted(set(cursors))  # strictly increasing
    assert all(e["queueId"] == world.queue_id for e in events)
    assert events[3]["snapshot"]["state"] == "QUEUED"
    assert events[2]["actor"]["name"] == f"{names}-0"
    # Each entity's version after the change: the proposal 1, 2; its task 1, 2, 3.
    assert [e["entityVersion"] for e in events] == [1, 1, 2, 2, 3]


async def test_resume_replays_exactly_what_was_missed_then_goes_live(
    module_server: ModuleServer,
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewer_names=unique_name("reviewer"))
        reviewer = world.reviewers[0]
        await feed_settled(sessionmaker)
        start = await head_cursor(gql, reviewer)
        async with queue_subscription(
            server, reviewer, queue_id=world.queue_id, after=start
        ) as first:
            seen_before = await create_tasks(gql, world.admin, world.queue_id, 2, "before")
            last = (await first.wait_for(2))[-1]["cursor"]

        missed = await create_tasks(gql, world.admin, world.queue_id, 20, "missed")
        async with queue_subscription(
            server, reviewer, queue_id=world.queue_id, after=last
        ) as second:
            # Writers keep going while the replay runs: the seam must hold.
            during = asyncio.create_task(
                create_tasks(gql, world.admin, world.queue_id, 10, "during")
            )
            events = await second.wait_for(20)
            concurrent = await during
            live = await create_tasks(gql, world.admin, world.queue_id, 3, "live")
            events = await second.wait_for(33)
            extra = await second.quiet(0.5)

    ids = [e["entityId"] for e in extra]
    assert ids == missed + concurrent + live
    assert not set(ids) & set(seen_before)
    cursors = [decode_cursor(e["cursor"]) for e in events]
    assert cursors == sorted(cursors) and len(set(cursors)) == len(cursors)


async def test_resuming_from_a_pruned_cursor_is_cursor_expired(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql)
        await create_tasks(gql, world.admin, world.queue_id, 3, "old")
        await feed_settled(sessionmaker)
        old = encode_cursor(1)
        async with sessionmaker() as session:
            await feed.prune(session, clock.now() + timedelta(seconds=1))
            await session.commit()
        async with queue_subscription(
            server, world.admin, queue_id=world.queue_id, after=old
        ) as sub:
            with pytest.raises(AssertionError, match="CURSOR_EXPIRED"):
                await sub.wait_for(1, within=5)
        async with queue_subscription(
            server, world.admin, queue_id=world.queue_id, after="not-a-cursor"
        ) as sub:
            with pytest.raises(AssertionError, match="INVALID_CURSOR"):
                await sub.wait_for(1, within=5)


async def test_a_reviewer_never_receives_another_queues_events(module_server: ModuleServer) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        mine = await build_world(gql, reviewer_names=unique_name("reviewer"))
        theirs = await build_world(gql, reviewer_names=unique_name("reviewer"))
        reviewer = await gql.token(
            Role.REVIEWER, name=unique_name("only-mine"), queues=[mine.queue_slug]
        )
        await feed_settled(sessionmaker)
        after = await head_cursor(gql, reviewer)
        async with (
            queue_subscription(server, reviewer, after=after) as all_mine,
            queue_subscription(server, reviewer, queue_id=theirs.queue_id) as forbidden,
        ):
            await theirs.propose()
            await mine.propose()
            events = await all_mine.wait_for(2)
            with pytest.raises(AssertionError, match="FORBIDDEN"):
                await forbidden.wait_for(1, within=5)
            events = await all_mine.quiet(0.5)
    assert {e["queueId"] for e in events} == {mine.queue_id}
    assert [e["kind"] for e in events] == ["proposal.proposed", "task.created"]


REMOVE_MEMBER = """
mutation($input: QueueMemberInput!) { removeQueueMember(input: $input) { id } }
"""


async def test_a_reviewer_removed_from_a_queue_stops_receiving_it(
    module_server: ModuleServer,
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewer_names=unique_name("reviewer"))
        reviewer = world.reviewers[0]
        me = (await gql("query { viewer { actor { id } } }", token=reviewer))["viewer"]
        await feed_settled(sessionmaker)
        after = await head_cursor(gql, reviewer)
        async with (
            queue_subscription(server, reviewer, after=after) as everything,
            queue_subscription(server, reviewer, queue_id=world.queue_id, after=after) as one_queue,
        ):
            await create_tasks(gql, world.admin, world.queue_id, 1, "visible")
            await everything.wait_for(1)
            await one_queue.wait_for(1)
            await gql(
                REMOVE_MEMBER,
                {"input": {"queueId": world.queue_id, "actorId": me["actor"]["id"]}},
                world.admin,
            )
            await create_tasks(gql, world.admin, world.queue_id, 2, "hidden")
            with pytest.raises(AssertionError, match="FORBIDDEN"):
                await one_queue.wait_for(2, within=5)
            events = await everything.quiet(1.0)
    assert [e["kind"] for e in events] == ["task.created"]


async def test_agents_follow_their_own_proposal(module_server: ModuleServer) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewer_names=unique_name("reviewer"))
        proposed = await world.propose()
        proposal_id = proposed["proposal"]["id"]
        query = """subscription($id: ID!, $after: String) {
          proposalEvents(proposalId: $id, after: $after) {
            kind cursor proposal { id state approvalCount } task { state }
          } }"""
        async with Subscription(
            server.ws_url, world.agent, query, {"id": proposal_id, "after": encode_cursor(0)}
        ) as sub:
            await world.decide(world.reviewers[0], proposed["proposal"])
            events = await sub.wait_for(4)
    assert [e["kind"] for e in events] == [
        "proposal.proposed",
        "task.created",
        "proposal.approved",
        "task.completed",
    ]
    assert events[2]["proposal"] == {"id": proposal_id, "state": "QUEUED", "approvalCount": 1}
    assert events[3]["task"] == {"state": "COMPLETED"}


async def test_a_frames_proposal_reads_its_relations_as_a_query_does(
    module_server: ModuleServer,
) -> None:
    """A frame's proposal warms its relations in one read (``warm_proposal_fully``); a
    query reads them along its proposal (``PageRelations``) and the loaders: the same answer."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewer_names=unique_name("reviewer"))
        proposed = await world.propose()
        proposal_id = proposed["proposal"]["id"]
        # The proposal's own events first, or a late one arrives as the first frame.
        await feed_settled(sessionmaker)
        query = f"""subscription($id: ID!) {{
          proposalEvents(proposalId: $id) {{ kind proposal {{ {PROPOSAL_RELATIONS} }} }} }}"""
        async with Subscription(server.ws_url, world.agent, query, {"id": proposal_id}) as sub:
            # Followed before the decision (no ``after``: an event committed before the
            # subscription joins would never reach it), so its writer hands the relations over.
            await server.subscriptions_live(1)
            await world.decide(world.reviewers[0], proposed["proposal"], "REJECTED")
            events = await sub.wait_for(2)
        read = f"query($id: ID!) {{ proposal(id: $id) {{ {PROPOSAL_RELATIONS} }} }}"
        answer = await gql(read, {"id": proposal_id}, token=world.agent)
    assert [e["kind"] for e in events] == ["proposal.rejected", "task.completed"]
    assert events[0]["proposal"] == answer["proposal"]
    assert events[0]["proposal"]["approvals"][0]["approver"]["name"]


async def test_incident_events_are_for_operators(module_server: ModuleServer) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewer_names=unique_name("reviewer"))
        operator = await gql.token(Role.OPERATOR, name=unique_name("operator"))
        query = "subscription($after: String) { incidentEvents(after: $after) { kind entityId } }"
        async with (
            Subscription(server.ws_url, operator, query, {"after": encode_cursor(0)}) as ops,
            Subscription(server.ws_url, world.reviewers[0], query, {"after": None}) as rev,
        ):
            async with sessionmaker() as session:  # as delivery's dead-letter job will
                unit = UnitOfWork(session)
                record_event(
                    unit,
                    kind=ChangeKind.INCIDENT_OPENED,
                    entity_type="incident",
                    entity_id="incident-1",
                    snapshot={"severity": "high"},
                )
                await unit.commit()
            events = await ops.wait_for(1)
            with pytest.raises(AssertionError, match="FORBIDDEN"):
                await rev.wait_for(1, within=5)
    assert events == [{"kind": "incident.opened", "entityId": "incident-1"}]


async def test_a_token_revoked_outside_the_feed_closes_its_socket_at_the_next_re_read(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    """A change made outside the feed (a token revoked by hand in the database) is caught
    by the periodic re-read, the safety net: the socket closes with 4403."""
    server = await serve(SIGNOFF_EVENTS_AUTH_REFRESH_SECONDS="0.2")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql)
        reviewer = world.reviewers[0]
        await feed_settled(sessionmaker)
        after = await head_cursor(gql, reviewer)
        variables = {"queueId": world.queue_id, "after": after}
        async with open_stream(server, reviewer, QUEUE_EVENTS, variables) as stream:
            await create_tasks(gql, world.admin, world.queue_id, 1, "seen")
            await stream.until(lambda s: len(s.frames) == 1)
            await revoke_by_hand(sessionmaker, reviewer)
            await stream.until(lambda s: s.close_code is not None, within=5)
            await create_tasks(gql, world.admin, world.queue_id, 1, "unseen")
    assert stream.close_code == 4403
    assert [f["data"]["queueEvents"]["kind"] for f in stream.frames] == ["task.created"]
