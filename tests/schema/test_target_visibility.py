"""Who reads which targets, and their URLs: reviewers their queues' targets, agents the
targets they may propose to, only operators and admins the URLs; an id the viewer may
not read is answered as one that does not exist (docs/design.md section 10)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlmodel import col, update

from signoff.models import Role, Target
from tests.helpers import GraphQLClient, World, build_world

TARGETS = "{ targets { id name url approvalPolicy queue { slug } } }"
TARGET = "query($id: ID!) { target(id: $id) { id url } }"
QUEUE = "query($id: ID!) { queue(id: $id) { id slug } }"
SIMULATE = """
query($id: ID!) { simulatePolicy(targetId: $id, payload: {amount: 5}) { target { id url } } }
"""
RETIRE = "mutation($id: ID!) { retireTarget(input: {targetId: $id}) { id } }"
# Stored by an earlier version, before URLs with credentials were refused.
WITH_CREDENTIALS = "https://svc:hunter2@payments.example/hook"


async def _two_worlds(gql: GraphQLClient) -> tuple[World, World]:
    ours = await build_world(gql, url="https://payments.example/hook")
    theirs = await build_world(gql, url="https://ledger.example/hook", reviewer_names="other")
    async with gql.sessionmaker() as session:
        stored = update(Target).where(col(Target.id) == ours.target_id)
        await session.exec(stored.values(url=WITH_CREDENTIALS))
        await session.commit()
    return ours, theirs


async def _targets(gql: GraphQLClient, token: str) -> dict[str, Any]:
    return {t["id"]: t for t in (await gql(TARGETS, None, token))["targets"]}


async def _refusal(gql: GraphQLClient, query: str, target_id: str, token: str) -> Any:
    """The error as the viewer sees it, without the id it named."""
    error = (await gql.error(query, {"id": target_id}, token)).errors[0]
    return (error["message"], error["extensions"], error["path"])


async def test_reviewers_read_only_their_queues_targets_and_no_url(gql: GraphQLClient) -> None:
    ours, theirs = await _two_worlds(gql)
    reviewer = ours.reviewers[0]
    seen = await _targets(gql, reviewer)
    assert list(seen) == [ours.target_id]
    assert seen[ours.target_id]["url"] is None
    assert seen[ours.target_id]["queue"] == {"slug": ours.queue_slug}
    assert (await gql(TARGET, {"id": ours.target_id}, reviewer))["target"]["url"] is None
    # Another queue's target, and its queue, are answered as ids nobody has.
    unknown = str(uuid.uuid4())
    for query, foreign in ((TARGET, theirs.target_id), (SIMULATE, theirs.target_id)):
        refused = await _refusal(gql, query, foreign, reviewer)
        assert refused == await _refusal(gql, query, unknown, reviewer)
        assert refused[1]["code"] == "NOT_FOUND"
    refused = await _refusal(gql, QUEUE, theirs.queue_id, reviewer)
    assert refused == await _refusal(gql, QUEUE, unknown, reviewer)
    assert refused[1] == {"code": "NOT_FOUND"}


async def test_agents_read_what_they_may_propose_to_and_staff_the_urls(
    gql: GraphQLClient,
) -> None:
    ours, theirs = await _two_worlds(gql)
    await gql(RETIRE, {"id": theirs.target_id}, theirs.admin)
    seen = await _targets(gql, ours.agent)
    assert list(seen) == [ours.target_id]  # the retired target takes no proposals
    assert seen[ours.target_id]["url"] is None
    simulated = await gql(SIMULATE, {"id": ours.target_id}, ours.agent)
    assert simulated["simulatePolicy"]["target"] == {"id": ours.target_id, "url": None}
    refused = await _refusal(gql, TARGET, theirs.target_id, ours.agent)
    assert refused == await _refusal(gql, TARGET, str(uuid.uuid4()), ours.agent)
    # Operators and admins read every target, retired or not, with its URL.
    operator = await gql.token(Role.OPERATOR, name="operator")
    for token in (operator, ours.admin):
        seen = await _targets(gql, token)
        assert seen[ours.target_id]["url"] == WITH_CREDENTIALS
        assert seen[theirs.target_id]["url"] == "https://ledger.example/hook"


async def test_a_reviewer_reads_a_target_whose_policy_routes_to_their_queue(
    gql: GraphQLClient,
) -> None:
    ours, theirs = await _two_worlds(gql)
    policy = {"rules": [{"when": {"type": "object"}, "approvals": 1, "queue": theirs.queue_slug}]}
    routed = await build_world(
        gql, approvalPolicy=policy, reviewer_names="routed", url="https://routed.example/x"
    )
    seen = await _targets(gql, theirs.reviewers[0])
    assert set(seen) == {theirs.target_id, routed.target_id}
    assert set(await _targets(gql, ours.reviewers[0])) == {ours.target_id}
