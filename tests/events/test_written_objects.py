"""A writer's change events carry the objects it wrote (``feed.written_objects``), so a
live frame reads nothing: what it shows is what a read from the database shows."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from graphql import GraphQLObjectType, get_named_type, is_leaf_type
from httpx import AsyncClient
from starlette.applications import Starlette

from signoff.events import Change, EventService
from signoff.schema import build_schema
from tests.conftest import requires_postgres
from tests.helpers import CREATE_TASK, GraphQLClient, build_world, statements_sent
from tests.live import (
    PROPOSAL_RELATIONS,
    InProcessServer,
    Subscription,
    feed_settled,
    head_cursor,
    subscriptions_live,
    world_at_head,
)
from tests.schema.test_amendments import amend


def scalar_fields(type_name: str) -> str:
    """Every field of ``type_name`` that is a scalar or an enum and takes no argument."""
    graphql_type = build_schema()._schema.get_type(type_name)
    assert isinstance(graphql_type, GraphQLObjectType)
    return " ".join(
        name
        for name, field in graphql_type.fields.items()
        if is_leaf_type(get_named_type(field.type)) and not field.args
    )


WATCH = f"""
subscription($q: ID, $a: String) {{
  queueEvents(queueId: $q, after: $a) {{
    cursor kind entityId entityVersion
    proposal {{ {scalar_fields("Proposal")} }}
    task {{ {scalar_fields("HumanTask")} }}
  }}
}}
"""


def names_tasks_or_proposals(statement: str) -> bool:
    return "human_tasks" in statement or "proposals" in statement


async def test_live_frames_show_what_a_replay_from_the_database_shows(
    app: Starlette, live: InProcessServer, gql: GraphQLClient
) -> None:
    async with AsyncClient(base_url=live.url, timeout=30) as client:
        world, after = await world_at_head(GraphQLClient(client, gql.sessionmaker))
        reviewer = world.reviewers[0]
        variables = {"q": world.queue_id, "a": after}
        async with Subscription(live.ws_url, reviewer, WATCH, variables) as watching:
            await subscriptions_live(app, 1)
            with statements_sent(app, names_tasks_or_proposals, reads_only=True) as reads:
                await world.propose()
                live_frames = list(await watching.wait_for(2))
        # The writer read their objects; on SQLite it also stamped the events.
        assert reads == [], "live frames should read no task or proposal"
        async with Subscription(live.ws_url, reviewer, WATCH, variables) as replaying:
            replayed = await replaying.wait_for(2)
    assert [frame["kind"] for frame in live_frames] == ["proposal.proposed", "task.created"]
    assert live_frames[0]["proposal"]["state"] == "APPROVAL_REQUIRED"
    assert live_frames[1]["task"]["id"] == live_frames[1]["entityId"]
    assert live_frames[1]["proposal"]["id"] == live_frames[0]["proposal"]["id"]
    assert live_frames == replayed


@requires_postgres
async def test_on_postgresql_the_sequencer_publishes_the_writers_objects(
    app: Starlette, live: InProcessServer, gql: GraphQLClient
) -> None:
    """Stamped after commit, the events still carry what their writer read before it,
    and the sequencer keeps nothing once it has stamped them."""
    events: EventService = app.state.events
    async with AsyncClient(base_url=live.url, timeout=30) as client:
        world, _ = await world_at_head(GraphQLClient(client, gql.sessionmaker))
        local = events.hub.subscribe(lambda change: change.queue_id == world.queue_id)
        try:
            proposed = await world.propose()
            proposal, task = [await asyncio.wait_for(local.get(), 10) for _ in range(2)]
        finally:
            events.hub.unsubscribe(local)
    assert (proposal.kind, task.kind) == ("proposal.proposed", "task.created")
    assert proposal.written["proposal"].id == proposed["proposal"]["id"]
    assert proposal.written["proposal"].state == "APPROVAL_REQUIRED"
    assert proposal.written["proposal"].version == proposal.entity_version
    assert task.written["task"].id == task.entity_id == proposed["task"]["id"]
    assert task.written["proposal"].id == proposed["proposal"]["id"]
    assert len(events.written) == 0


WAITING = f"""
subscription($id: ID!, $a: String) {{
  proposalEvents(proposalId: $id, after: $a) {{ cursor kind proposal {{ {PROPOSAL_RELATIONS} }} }}
}}
"""


def reads_relations(statement: str) -> bool:
    return any(table in statement for table in ("approvals", "revisions", "delivery_attempts"))


async def test_a_decisions_frames_execute_their_proposal_once(
    app: Starlette, live: InProcessServer, gql: GraphQLClient
) -> None:
    """A decision's two events carry one proposal record: the waiting agent's group
    executes its selection for the first frame and the second answers with it
    (``shared_values``), as a replay, whose frames execute each their own, shows it."""
    async with AsyncClient(base_url=live.url, timeout=30) as client:
        http = GraphQLClient(client, gql.sessionmaker)
        world, _ = await world_at_head(http)
        proposed = await world.propose()
        proposal_id = proposed["proposal"]["id"]
        await feed_settled(gql.sessionmaker)
        after = await head_cursor(http, world.reviewers[0])
        variables = {"id": proposal_id, "a": after}
        async with Subscription(live.ws_url, world.agent, WAITING, variables) as waiting:
            await subscriptions_live(app, 1)
            with statements_sent(app, reads_relations, reads_only=True) as reads:
                await world.decide(world.reviewers[0], proposed["proposal"], "REJECTED")
                live_frames = list(await waiting.wait_for(2))
        read = f"query($id: ID!) {{ proposal(id: $id) {{ {PROPOSAL_RELATIONS} }} }}"
        answer = await http(read, {"id": proposal_id}, world.agent)
        async with Subscription(live.ws_url, world.agent, WAITING, variables) as replaying:
            replayed = await replaying.wait_for(2)
    assert [frame["kind"] for frame in live_frames] == ["proposal.rejected", "task.completed"]
    assert live_frames[0]["proposal"] == live_frames[1]["proposal"] == answer["proposal"]
    assert live_frames == replayed
    assert not any("proposal_revisions" in read for read in reads), "never amended: no rows"
    if app.state.events.stamps_in_writers:
        assert reads == [], "SQLite: the writer handed its relations over (events.relations)"
    else:
        assert reads, "the first frame reads its proposal's relations"
        assert len(reads) == len(set(reads)), "the second frame should read none again"


async def test_an_amended_proposals_frames_show_what_its_writers_left(
    app: Starlette, live: InProcessServer, gql: GraphQLClient
) -> None:
    """A waiting agent's frames of an amendment and of a decision show the proposal's
    revisions, who amended it, its approvals and approvers as a read from the database
    and a replay do; on SQLite, from its writers' hand-over, with no read of their own,
    even when the decision comes before the amendment's frames are sent."""
    async with AsyncClient(base_url=live.url, timeout=30) as client:
        http = GraphQLClient(client, gql.sessionmaker)
        world = await build_world(http, required_approvals=2)
        proposed = (await world.propose())["proposal"]
        await world.decide(world.reviewers[1], proposed, "APPROVED")
        await feed_settled(gql.sessionmaker)
        after = await head_cursor(http, world.reviewers[0])
        variables = {"id": proposed["id"], "a": after}
        async with Subscription(live.ws_url, world.agent, WAITING, variables) as waiting:
            await subscriptions_live(app, 1)
            with statements_sent(app, reads_relations, reads_only=True) as reads:
                amended = await amend(world, world.reviewers[0], proposed, patch={"amount": 7})
                if not app.state.events.stamps_in_writers:
                    # On PostgreSQL a frame reads the relations when it is sent, so a
                    # decision committed before then shows in the amendment's frames.
                    await waiting.wait_for(AMENDED_AND_REJECTED // 2)
                await world.decide(world.reviewers[0], amended["proposal"], "REJECTED")
                live_frames = list(await waiting.wait_for(AMENDED_AND_REJECTED))
        read = f"query($id: ID!) {{ proposal(id: $id) {{ {PROPOSAL_RELATIONS} }} }}"
        answer = await http(read, {"id": proposed["id"]}, world.agent)
        async with Subscription(live.ws_url, world.agent, WAITING, variables) as replaying:
            replayed = await replaying.wait_for(AMENDED_AND_REJECTED)
    # A replay shows each proposal as it is now: the frames of the last write alike.
    assert live_frames[2:] == replayed[2:]
    last = live_frames[-1]["proposal"]
    assert last == answer["proposal"]
    assert [r["amendedBy"] for r in last["revisions"]] == [None, {"name": "reviewer-0"}]
    assert [a["decision"] for a in last["approvals"]] == ["APPROVED", "REJECTED"]
    # The amendment's frames show the proposal as the amendment left it.
    for frame in live_frames[:2]:
        assert frame["proposal"]["revisions"] == last["revisions"]
        assert frame["proposal"]["approvals"] == last["approvals"][:1]
    if app.state.events.stamps_in_writers:
        assert reads == [], "SQLite: the writers handed their relations over"


# What the waiting agent receives of an amendment, then of a rejection.
AMENDED_AND_REJECTED = 4


CONCURRENT = f"""
subscription($q: ID, $a: String) {{
  queueEvents(queueId: $q, after: $a) {{
    cursor kind entityId proposalId
    proposal {{ id state approvalCount }}
    task {{ {scalar_fields("HumanTask")} }}
  }}
}}
"""


async def test_concurrent_writers_frames_show_each_its_own_objects(
    app: Starlette, live: InProcessServer, gql: GraphQLClient
) -> None:
    """Proposals and tasks written at once: every frame shows the objects of its own
    event, read by its writer, and the same as a replay from the database."""
    async with AsyncClient(base_url=live.url, timeout=30) as client:
        http = GraphQLClient(client, gql.sessionmaker)
        world, after = await world_at_head(http)
        reviewer = world.reviewers[0]
        variables = {"q": world.queue_id, "a": after}
        async with Subscription(live.ws_url, reviewer, CONCURRENT, variables) as watching:
            await subscriptions_live(app, 1)
            with statements_sent(app, names_tasks_or_proposals, reads_only=True) as reads:
                tasks = [
                    http(
                        CREATE_TASK,
                        {"i": {"queueId": world.queue_id, "kind": "REVIEW", "title": f"t-{i}"}},
                        world.admin,
                    )
                    for i in range(6)
                ]
                await asyncio.gather(*tasks, *(world.propose() for _ in range(6)))
                live_frames = list(await watching.wait_for(18))
        assert reads == [], "live frames should read no task or proposal"
        async with Subscription(live.ws_url, reviewer, CONCURRENT, variables) as replaying:
            replayed = await replaying.wait_for(18)
    assert live_frames == replayed
    for frame in live_frames:
        if frame["kind"] == "task.created":
            assert frame["task"]["id"] == frame["entityId"]
        if frame["proposalId"] is not None:
            assert frame["proposal"]["id"] == frame["proposalId"]
    titles = sorted(f["task"]["title"] for f in live_frames if f["proposalId"] is None)
    assert titles == [f"t-{i}" for i in range(6)]


def test_a_changes_own_fields_never_carry_records() -> None:
    """Records travel beside a change's fields (``events.wire``), never among them."""
    change = Change(
        cursor=7,
        kind="task.created",
        entity_type="task",
        entity_id="t1",
        queue_id="q1",
        proposal_id=None,
        actor_id=None,
        occurred_at=datetime(2026, 12, 3, tzinfo=UTC),
        written={"task": object()},
    )
    wire = change.to_wire()
    assert "written" not in wire
    assert Change.from_wire(wire).written == {}
    assert Change.from_wire(wire) == change
    # Objects are never taken from the wire, whoever put them there.
    assert Change.from_wire({**wire, "written": {"task": {}}}).written == {}


async def test_a_writer_late_after_its_commit_needs_no_read_for_its_frame(
    app: Starlette, live: InProcessServer, gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that resumes after its commit later than the reorder wait: the events
    after its own go first, the hub fills the gap from the database, and the filled
    event still shows what its writer read rather than reading it again."""
    events: EventService = app.state.events
    before_commit = events.before_commit
    held, release = asyncio.Event(), asyncio.Event()

    async def late_first_writer(
        session: Any, rows: Sequence[Mapping[str, Any]]
    ) -> Callable[[], Awaitable[None]]:
        hook = await before_commit(session, rows)
        if held.is_set():
            return hook
        held.set()

        async def late() -> None:
            await release.wait()
            await hook()

        return late

    async with AsyncClient(base_url=live.url, timeout=30) as client:
        http = GraphQLClient(client, gql.sessionmaker)
        world, after = await world_at_head(http)
        variables = {"q": world.queue_id, "a": after}
        create = {"queueId": world.queue_id, "kind": "REVIEW"}
        async with Subscription(live.ws_url, world.reviewers[0], CONCURRENT, variables) as watching:
            await subscriptions_live(app, 1)
            with statements_sent(app, names_tasks_or_proposals, reads_only=True) as reads:
                monkeypatch.setattr(events, "before_commit", late_first_writer)
                first = asyncio.create_task(
                    http(CREATE_TASK, {"i": {**create, "title": "late"}}, world.admin)
                )
                await asyncio.wait_for(held.wait(), 10)
                await http(CREATE_TASK, {"i": {**create, "title": "on time"}}, world.admin)
                live_frames = list(await watching.wait_for(2))
                release.set()
                await first
        assert reads == [], "the filled event's frame should read no task"
    assert [frame["task"]["title"] for frame in live_frames] == ["late", "on time"]
