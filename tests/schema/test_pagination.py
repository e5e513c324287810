"""Keyset pages in the documented order, and nested fields at a constant query cost."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

import pytest
from starlette.applications import Starlette

from signoff.config import Settings
from signoff.models import pipeline
from tests.conftest import requires_postgres
from tests.helpers import GraphQLClient, build_world, statements_sent


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Every request reads its viewer: the statements counted here do not depend on
    whether the token's viewer was still in the cache."""
    return replace(settings, auth_cache_seconds=0)


PAGE = """query($after: String) { proposals(first: 100, after: $after) {
  pageInfo { hasNextPage endCursor }
  edges { cursor node { id state
    target { id name }
    task { id state }
    approvals { id decision } } } } }"""

FULL_PAGE = """query($first: Int) { proposals(first: $first) { edges { node { id
  target { name queue { slug } } queue { slug } proposedBy { name }
  task { state queue { slug } assignee { name } }
  approvals { decision approver { name } } } } } }"""


# The change feed's sequencer and relay run in the background on the same engine,
# stamping the setup's events and giving its audit records their log positions, and at
# each tick the checkpointer looks at the latest checkpoint and the log's first record:
# a query never touches the feed's tables, nor reads the log by position.
FEED_MARKS = (
    "change_events",
    "change_feed_state",
    "audit_events.position IS NULL",
    "FROM audit_checkpoints",
    "WHERE audit_events.position = ",
)


def _counted(statement: str) -> bool:
    """Requests' statements: not transaction control, not the change feed's own."""
    if statement.lstrip().upper().startswith(("BEGIN", "COMMIT", "ROLLBACK")):
        return False
    return not any(mark in statement for mark in FEED_MARKS)


def counting_statements(app: Starlette) -> AbstractContextManager[list[str]]:
    """Every SQL statement the app's engine sends for requests, transaction control aside."""
    return statements_sent(app, _counted)


async def test_a_page_of_100_proposals_costs_at_most_six_statements(
    gql: GraphQLClient, app: Starlette
) -> None:
    world = await build_world(gql)
    proposals = [(await world.propose())["proposal"] for _ in range(100)]
    for proposal in proposals[::3]:
        await world.decide(world.reviewers[0], proposal)

    with counting_statements(app) as statements:
        page = await gql(PAGE, {}, world.admin)
    edges = page["proposals"]["edges"]
    assert len(edges) == 100
    assert all(e["node"]["target"]["id"] == world.target_id for e in edges)
    assert sum(len(e["node"]["approvals"]) for e in edges) == 34
    assert len(statements) <= 6, statements


ONE = """query($id: ID!) { proposal(id: $id) { id
  target { id name } task { id state } approvals { id decision } } }"""


@requires_postgres
@pytest.mark.parametrize("read", ["page", "one"])
async def test_proposals_read_their_relations_in_their_own_round_trip(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch, read: str
) -> None:
    world = await build_world(gql)
    for _ in range(3):
        proposal = (await world.propose())["proposal"]
        await world.decide(world.reviewers[0], proposal)
    trips: list[list[str]] = []
    read_pipelined = pipeline.read

    async def noted(driver: Any, statements: Any, **commands: Any) -> Any:
        trips.append([statement.sql.decode() for statement, _ in statements])
        return await read_pipelined(driver, statements, **commands)

    monkeypatch.setattr(pipeline, "read", noted)
    if read == "page":
        page = await gql(PAGE, {}, world.admin)
        assert sum(len(e["node"]["approvals"]) for e in page["proposals"]["edges"]) == 3
    else:
        one = await gql(ONE, {"id": proposal["id"]}, world.admin)
        assert len(one["proposal"]["approvals"]) == 1 and one["proposal"]["task"]
    (trip,) = [trip for trip in trips if "FROM proposals" in trip[0]]
    # The proposals, then their targets, tasks and approvals, all in one pipeline.
    tables = ("FROM targets", "FROM human_tasks", "FROM approvals")
    assert [next(t for t in tables if t in sql) for sql in trip[1:]] == list(tables)
    others = [sql for other in trips if other is not trip for sql in other]
    assert not any(table in sql for sql in others for table in tables)


async def test_nested_cost_does_not_grow_with_the_page(gql: GraphQLClient, app: Starlette) -> None:
    world = await build_world(gql)
    for _ in range(30):
        proposal = (await world.propose())["proposal"]
        await world.decide(world.reviewers[0], proposal)
    costs = []
    for first in (3, 30):
        with counting_statements(app) as statements:
            await gql(FULL_PAGE, {"first": first}, world.admin)
        costs.append(len(statements))
    assert costs[0] == costs[1], costs


async def test_pages_walk_every_proposal_once_newest_first(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    ids = [(await world.propose())["proposal"]["id"] for _ in range(7)]
    seen: list[str] = []
    after = None
    while True:
        page = (
            await gql(
                """query($after: String) { proposals(first: 3, after: $after) {
            pageInfo { hasNextPage endCursor } edges { node { id task { id } } } } }""",
                {"after": after},
                world.admin,
            )
        )["proposals"]
        seen += [e["node"]["id"] for e in page["edges"]]
        # Read along each page, after its cursor too: each proposal has its task.
        assert all(e["node"]["task"] for e in page["edges"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == list(reversed(ids))


async def test_tasks_come_by_priority_then_due_time_then_age(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    create = """mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"""
    made = {}
    for name, priority, due in [
        ("low", 0, 3600),
        ("urgent", 10, 7200),
        ("soon", 0, 600),
        ("later", 0, 3600),
    ]:
        made[name] = (
            await gql(
                create,
                {
                    "input": {
                        "queueId": world.queue_id,
                        "kind": "REVIEW",
                        "title": name,
                        "priority": priority,
                        "dueInSeconds": due,
                    }
                },
                world.agent,
            )
        )["createTask"]["id"]
    page = await gql(
        "{ tasks(first: 2) { pageInfo { endCursor } edges { node { title } } } }",
        token=world.reviewers[0],
    )
    rest = await gql(
        "query($a: String) { tasks(after: $a) { edges { node { title } } } }",
        {"a": page["tasks"]["pageInfo"]["endCursor"]},
        world.reviewers[0],
    )
    titles = [e["node"]["title"] for e in page["tasks"]["edges"] + rest["tasks"]["edges"]]
    assert titles == ["urgent", "soon", "low", "later"]


async def test_a_forged_cursor_is_refused(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    error = await gql.error(
        '{ proposals(after: "not-a-cursor") { edges { cursor } } }', token=world.admin
    )
    assert error.code == "VALIDATION_FAILED"
    assert error.errors[0]["extensions"]["field"] == "after"
