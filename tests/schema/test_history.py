"""History: decided proposals, most recently decided first, narrowed by state, target,
agent, reviewer, time and subject words, under the read rule of ``proposals``."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from signoff import clock
from signoff.models import Role
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.reach.deadlines import apply_deadlines
from tests.helpers import GraphQLClient, World, build_world, unique_name

HISTORY = """
query(
  $states: [ProposalState!], $targetId: ID, $proposedById: ID, $reviewerId: ID,
  $decidedAfter: DateTime, $decidedBefore: DateTime, $search: String, $first: Int,
  $after: String
) {
  history(
    states: $states, targetId: $targetId, proposedById: $proposedById,
    reviewerId: $reviewerId, decidedAfter: $decidedAfter, decidedBefore: $decidedBefore,
    search: $search, first: $first, after: $after
  ) {
    pageInfo { hasNextPage endCursor }
    nodes { id state subject decidedAt proposedBy { name } target { id } }
  }
}
"""

ME = "{ viewer { actor { id } } }"


async def _actor_id(gql: GraphQLClient, token: str) -> str:
    data = await gql(ME, token=token)
    actor_id: str = data["viewer"]["actor"]["id"]
    return actor_id


async def _history(gql: GraphQLClient, token: str, **variables: Any) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = (await gql(HISTORY, variables, token))["history"]["nodes"]
    return nodes


def _ids(nodes: list[dict[str, Any]]) -> list[str]:
    return [node["id"] for node in nodes]


async def _two_worlds(gql: GraphQLClient) -> tuple[World, World]:
    """Two queues and targets, each with an agent of its own."""
    world = await build_world(gql)
    other = await build_world(gql, reviewer_names=unique_name("reviewer"))
    other.agent = await gql.token(Role.AGENT, name=unique_name("agent"))
    return world, other


async def _expire_now(gql: GraphQLClient) -> None:
    async with gql.sessionmaker() as session:
        await apply_deadlines(UnitOfWork(session))


async def _propose(world: World, order: str, customer: str) -> dict[str, Any]:
    proposal: dict[str, Any] = (
        await world.propose(subject={"order": order, "customer": customer}, expiresInSeconds=60)
    )["proposal"]
    return proposal


async def test_history_holds_decided_proposals_newest_decision_first(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    approved = await _propose(world, "o-1", "ACME Corp")
    rejected = await _propose(world, "o-2", "Globex")
    expired = await _propose(world, "o-3", "Initech")
    waiting = (await world.propose(expiresInSeconds=600))["proposal"]
    await world.decide(world.reviewers[0], approved)
    frozen_clock.advance(1)
    await world.decide(world.reviewers[1], rejected, decision="REJECTED", reason="Wrong order.")
    frozen_clock.advance(59)
    await _expire_now(gql)

    nodes = await _history(gql, world.admin)
    assert _ids(nodes) == [expired["id"], rejected["id"], approved["id"]]
    assert [n["state"] for n in nodes] == ["CANCELLED", "REJECTED", "QUEUED"]
    assert waiting["id"] not in _ids(nodes)
    decided = [datetime.fromisoformat(n["decidedAt"]) for n in nodes]
    assert decided == sorted(decided, reverse=True)


async def test_history_narrows_by_state_target_agent_reviewer_and_words(
    gql: GraphQLClient,
) -> None:
    world, other = await _two_worlds(gql)
    approved = await _propose(world, "o-1", "ACME Corp")
    rejected = await _propose(world, "o-2", "Globex 100%")
    elsewhere = await _propose(other, "o-3", "ACME Ltd")
    await world.decide(world.reviewers[0], approved)
    await world.decide(world.reviewers[1], rejected, decision="REJECTED")
    await other.decide(other.reviewers[0], elsewhere)
    admin = world.admin

    assert _ids(await _history(gql, admin, states=["REJECTED"])) == [rejected["id"]]
    assert _ids(await _history(gql, admin, targetId=world.target_id)) == [
        rejected["id"],
        approved["id"],
    ]
    agent = await _actor_id(gql, other.agent)
    assert _ids(await _history(gql, admin, proposedById=agent)) == [elsewhere["id"]]
    reviewer = await _actor_id(gql, world.reviewers[1])
    assert _ids(await _history(gql, admin, reviewerId=reviewer)) == [rejected["id"]]
    # Words of the subject, whatever their case; % and _ are taken literally.
    assert _ids(await _history(gql, admin, search="acme")) == [elsewhere["id"], approved["id"]]
    assert _ids(await _history(gql, admin, search="x 100%")) == [rejected["id"]]
    assert _ids(await _history(gql, admin, search="100_")) == []
    assert _ids(
        await _history(gql, admin, search="ACME", targetId=world.target_id, states=["QUEUED"])
    ) == [approved["id"]]


async def test_history_search_ignores_the_case_of_any_letter(gql: GraphQLClient) -> None:
    """Not only A-Z: SQLite's own lower() leaves "É" as it is, PostgreSQL's does not."""
    world, _ = await _two_worlds(gql)
    french = await _propose(world, "o-1", "Société Générale ÉTÉ")
    greek = await _propose(world, "o-2", "ΑΘΗΝΑ")
    for proposal in (french, greek):
        await world.decide(world.reviewers[0], proposal)
    assert _ids(await _history(gql, world.admin, search="générale été")) == [french["id"]]
    assert _ids(await _history(gql, world.admin, search="SOCIÉTÉ")) == [french["id"]]
    assert _ids(await _history(gql, world.admin, search="αθηνα")) == [greek["id"]]


async def test_history_narrows_by_when_it_was_decided(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    early = await _propose(world, "o-1", "ACME")
    late = await _propose(world, "o-2", "ACME")
    await world.decide(world.reviewers[0], early)
    between = frozen_clock.advance(30)
    await world.decide(world.reviewers[0], late)
    after = (between + timedelta(seconds=-1)).isoformat()
    assert _ids(await _history(gql, world.admin, decidedAfter=between.isoformat())) == [late["id"]]
    assert _ids(await _history(gql, world.admin, decidedBefore=between.isoformat())) == [
        early["id"]
    ]
    assert (
        _ids(
            await _history(gql, world.admin, decidedAfter=after, decidedBefore=between.isoformat())
        )
        == []
    )
    refused = await gql.error(
        HISTORY, {"decidedAfter": between.isoformat(), "decidedBefore": after}, world.admin
    )
    assert (refused.code, refused.extensions.get("field")) == ("VALIDATION_FAILED", "decidedBefore")


async def test_history_pages_follow_the_decisions(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    decided = []
    for i in range(5):
        proposal = await _propose(world, f"o-{i}", "ACME")
        await world.decide(world.reviewers[0], proposal)
        decided.append(proposal["id"])
        frozen_clock.advance(1)
    seen: list[str] = []
    after = None
    while True:
        page = (await gql(HISTORY, {"first": 2, "after": after}, world.admin))["history"]
        seen.extend(_ids(page["nodes"]))
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == list(reversed(decided))


async def test_each_role_sees_the_history_proposals_shows_it(gql: GraphQLClient) -> None:
    world, other = await _two_worlds(gql)
    mine = await _propose(world, "o-1", "ACME")
    theirs = await _propose(other, "o-2", "ACME")
    await world.decide(world.reviewers[0], mine)
    await other.decide(other.reviewers[0], theirs)
    # Reviewers: their queues; agents: what they proposed; staff: everything.
    assert _ids(await _history(gql, world.reviewers[1])) == [mine["id"]]
    assert _ids(await _history(gql, other.agent)) == [theirs["id"]]
    assert set(_ids(await _history(gql, world.admin))) >= {mine["id"], theirs["id"]}
    # Narrowing by another queue's reviewer finds nothing outside one's own queues.
    stranger = await _actor_id(gql, other.reviewers[0])
    assert _ids(await _history(gql, world.reviewers[1], reviewerId=stranger)) == []
    integration = await gql.token(Role.INTEGRATION)
    assert (await gql.error(HISTORY, {}, integration)).code == "FORBIDDEN"


async def test_history_holds_no_proposal_waiting_for_approval(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    refused = await gql.error(HISTORY, {"states": ["APPROVAL_REQUIRED"]}, world.admin)
    assert (refused.code, refused.extensions.get("field")) == ("VALIDATION_FAILED", "states")


async def test_a_proposal_let_through_by_its_target_is_decided_as_proposed(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql, approval_mode="BOUNDED_AUTO")
    proposal = await _propose(world, "o-1", "ACME")
    nodes = await _history(gql, world.admin, targetId=world.target_id)
    assert _ids(nodes) == [proposal["id"]]
    assert nodes[0]["decidedAt"] is not None
