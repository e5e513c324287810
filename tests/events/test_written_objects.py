"""A writer's change events carry the objects it wrote (``feed.written_objects``), so a
live frame reads nothing: what it shows is what a read from the database shows."""

from __future__ import annotations

from datetime import UTC, datetime

from graphql import GraphQLObjectType, get_named_type, is_leaf_type
from httpx import AsyncClient
from starlette.applications import Starlette

from signoff.events import Change
from signoff.schema import build_schema
from tests.helpers import GraphQLClient, statements_sent
from tests.live import (
    InProcessServer,
    Subscription,
    subscriptions_live,
    world_at_head,
)


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


def test_the_written_objects_stay_in_the_process() -> None:
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
