"""Single-use approval links: GET shows and never decides, POST decides once as the link's
reviewer under every usual rule (docs/design.md section 5.7)."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import httpx
import pytest
from sqlmodel import func, select

from signoff import clock
from signoff.models import (
    Approval,
    ApprovalLink,
    AuditEvent,
    ChangeEvent,
    HumanTask,
    Proposal,
    Role,
)
from signoff.models.proposal import payload_digest_of
from signoff.resolvers.access.actors import disable_actor, revoke_actor_tokens
from signoff.resolvers.core.work import WorkMaker
from signoff.web.ratelimit import RateLimiter
from tests.helpers import GraphQLClient, World, build_world

CREATE_LINK = """
mutation($input: CreateApprovalLinkInput!) {
  createApprovalLink(input: $input) { path link { id state payloadDigest expiresAt } }
}
"""
REVOKE_LINK = """
mutation($id: ID!) { revokeApprovalLink(input: {linkId: $id}) { state } }
"""
REMOVE_MEMBER = """
mutation($q: ID!, $a: ID!) { removeQueueMember(input: {queueId: $q, actorId: $a}) { id } }
"""
ME = "query { viewer { actor { id } } }"


async def actor_id(gql: GraphQLClient, token: str) -> str:
    return str((await gql(ME, token=token))["viewer"]["actor"]["id"])


async def linked(
    gql: GraphQLClient, world: World, **extra: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A proposal awaiting approval and a link for the first reviewer to decide it."""
    proposed = await world.propose(**extra.pop("propose", {}))
    reviewer_id = await actor_id(gql, world.reviewers[0])
    created = await gql(
        CREATE_LINK,
        {"input": {"taskId": proposed["task"]["id"], "reviewerId": reviewer_id, **extra}},
        world.admin,
    )
    return proposed, created["createApprovalLink"]


def form(digest: str, decision: str = "APPROVED", reason: str = "") -> dict[str, str]:
    return {"payload_digest": digest, "decision": decision, "reason": reason}


async def post(gql: GraphQLClient, path: str, data: dict[str, str]) -> httpx.Response:
    return await gql.http.post(path, data=data)


async def counts(gql: GraphQLClient) -> tuple[Any, ...]:
    """Everything a decision would write or change."""
    async with gql.sessionmaker() as session:
        tallies = [
            (await session.exec(select(func.count()).select_from(model))).one()
            for model in (Approval, AuditEvent, ChangeEvent)
        ]
        versions = (
            (await session.exec(select(func.sum(Proposal.version)))).one(),
            (await session.exec(select(func.sum(HumanTask.version)))).one(),
        )
        links = (await session.exec(select(ApprovalLink.state, ApprovalLink.version))).all()
    return (*tallies, *versions, sorted(links))


async def proposal_state(gql: GraphQLClient, proposal_id: str) -> str:
    async with gql.sessionmaker() as session:
        proposal = await session.get(Proposal, proposal_id)
        assert proposal is not None
        return str(proposal.state)


async def test_get_shows_the_payload_and_digest_and_never_decides(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    proposed, created = await linked(
        gql, world, propose={"payload": {"amount": 777, "currency": "EUR"}}
    )
    before = await counts(gql)
    for _ in range(3):
        page = await gql.http.get(created["path"])
        assert page.status_code == 200
    assert await counts(gql) == before  # no row written, no version bumped
    assert proposed["proposal"]["payloadDigest"] in page.text
    assert "&quot;amount&quot;: 777" in page.text
    assert 'name="decision" value="APPROVED"' in page.text
    assert page.headers["cache-control"] == "no-store"
    assert "noindex" in page.headers["x-robots-tag"]
    assert await proposal_state(gql, proposed["proposal"]["id"]) == "APPROVAL_REQUIRED"


async def test_post_decides_once_and_the_link_then_says_so(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    proposed, created = await linked(gql, world)
    digest = created["link"]["payloadDigest"]
    decided = await post(gql, created["path"], form(digest, reason="checked the order"))
    assert decided.status_code == 200, decided.text
    assert "QUEUED" in decided.text
    assert await proposal_state(gql, proposed["proposal"]["id"]) == "QUEUED"
    async with gql.sessionmaker() as session:
        [approval] = (await session.exec(select(Approval))).all()
        link = (await session.exec(select(ApprovalLink))).one()
    assert (approval.approver_id, approval.reason) == (
        await actor_id(gql, world.reviewers[0]),
        "checked the order",
    )
    assert link.state == "USED"

    before = await counts(gql)
    again = await post(gql, created["path"], form(digest))
    assert again.status_code == 410 and "already been used" in again.text
    shown = await gql.http.get(created["path"])
    assert shown.status_code == 410 and "USED" in shown.text
    assert await counts(gql) == before


async def test_the_token_is_stored_hashed(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    _, created = await linked(gql, world)
    token = created["path"].removeprefix("/links/")
    async with gql.sessionmaker() as session:
        link = (await session.exec(select(ApprovalLink))).one()
    assert link.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in (link.token_hash, link.id, link.payload_digest)


async def test_an_expired_or_revoked_link_is_refused(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    proposed, expiring = await linked(gql, world, ttlSeconds=600)
    frozen_clock.advance(600)
    shown = await gql.http.get(expiring["path"])
    assert shown.status_code == 410 and "EXPIRED" in shown.text
    refused = await post(gql, expiring["path"], form(expiring["link"]["payloadDigest"]))
    assert refused.status_code == 410 and "expired" in refused.text
    assert await proposal_state(gql, proposed["proposal"]["id"]) == "APPROVAL_REQUIRED"

    _, revoking = await linked(gql, world)
    revoked = await gql(REVOKE_LINK, {"id": revoking["link"]["id"]}, world.reviewers[0])
    assert revoked["revokeApprovalLink"]["state"] == "REVOKED"
    assert (await gql.http.get(revoking["path"])).status_code == 410
    again = await gql.error(REVOKE_LINK, {"id": revoking["link"]["id"]}, world.admin)
    assert again.code == "APPROVAL_LINK_UNUSABLE"
    assert (await gql.http.get("/links/not-a-token")).status_code == 404


async def test_a_link_to_a_proposal_decided_by_others_shows_no_form(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposed, created = await linked(gql, world)
    decided = await world.decide(world.reviewers[1], proposed["proposal"])
    settled = decided["proposal"]["state"]
    assert settled != "APPROVAL_REQUIRED"
    before = await counts(gql)
    shown = await gql.http.get(created["path"])
    assert shown.status_code == 410
    assert f"no longer awaits approval: it is {settled}" in shown.text and "SETTLED" in shown.text
    assert "<form" not in shown.text
    refused = await post(gql, created["path"], form(created["link"]["payloadDigest"]))
    assert refused.status_code == 409 and f"The proposal is {settled}" in refused.text
    assert await counts(gql) == before  # the link stays unused; nothing was decided


async def test_a_removed_reviewers_link_is_refused_and_stays_unused(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    proposed, created = await linked(gql, world)
    await gql(
        REMOVE_MEMBER,
        {"q": world.queue_id, "a": await actor_id(gql, world.reviewers[0])},
        world.admin,
    )
    before = await counts(gql)
    refused = await post(gql, created["path"], form(created["link"]["payloadDigest"]))
    assert refused.status_code == 410 and "REVIEWER_INELIGIBLE" in refused.text
    shown = await gql.http.get(created["path"])
    assert shown.status_code == 410 and "no longer works" in shown.text
    assert created["link"]["payloadDigest"] not in shown.text
    assert await counts(gql) == before
    assert await proposal_state(gql, proposed["proposal"]["id"]) == "APPROVAL_REQUIRED"


async def test_a_changed_digest_is_refused(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    """The form must name the link's digest, and the proposal must still have it: here its
    payload is changed in the database after the link was made, as an amendment would."""
    world = await build_world(gql)
    proposed, created = await linked(gql, world)
    tampered = await post(gql, created["path"], form("sha256:" + "0" * 64))
    assert tampered.status_code == 409 and "VALIDATION_FAILED" in tampered.text

    async with gql.sessionmaker() as session:
        proposal = await session.get(Proposal, proposed["proposal"]["id"])
        assert proposal is not None
        proposal.payload = {"amount": 99999, "currency": "EUR"}
        proposal.payload_digest = payload_digest_of(proposal)
        await session.commit()
    before = await counts(gql)
    refused = await post(gql, created["path"], form(created["link"]["payloadDigest"]))
    assert refused.status_code == 409 and "PAYLOAD_DIGEST_MISMATCH" in refused.text
    assert await counts(gql) == before
    assert await proposal_state(gql, proposed["proposal"]["id"]) == "APPROVAL_REQUIRED"


async def test_making_a_link_is_checked(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    task = (await world.propose())["task"]
    outsider = await gql.token(Role.REVIEWER, name="outsider", queues=[])
    cases = [
        (world.admin, await actor_id(gql, outsider), None, "ASSIGNEE_NOT_ELIGIBLE"),
        (world.admin, await actor_id(gql, world.agent), None, "ASSIGNEE_NOT_ELIGIBLE"),
        (world.admin, await actor_id(gql, world.reviewers[0]), 72 * 3600 + 1, "VALIDATION_FAILED"),
        (world.reviewers[1], await actor_id(gql, world.reviewers[0]), None, "FORBIDDEN"),
    ]
    for token, reviewer, ttl, code in cases:
        refused = await gql.error(
            CREATE_LINK,
            {"input": {"taskId": task["id"], "reviewerId": reviewer, "ttlSeconds": ttl}},
            token,
        )
        assert refused.code == code, (reviewer, ttl)
    own = await gql(
        CREATE_LINK,
        {"input": {"taskId": task["id"], "reviewerId": await actor_id(gql, world.reviewers[1])}},
        world.reviewers[1],
    )
    assert own["createApprovalLink"]["link"]["state"] == "ACTIVE"


async def test_link_requests_are_rate_limited(gql: GraphQLClient) -> None:
    answers = [(await gql.http.get(f"/links/guess-{i}")).status_code for i in range(31)]
    assert answers[:30] == [404] * 30
    assert answers[30] == 429


async def test_concurrent_posts_decide_once(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposed, created = await linked(gql, world)
    digest = created["link"]["payloadDigest"]
    answers = await asyncio.gather(*(post(gql, created["path"], form(digest)) for _ in range(5)))
    assert sorted(a.status_code for a in answers) == [200, 410, 410, 410, 410]
    async with gql.sessionmaker() as session:
        assert (await session.exec(select(func.count()).select_from(Approval))).one() == 1
    assert await proposal_state(gql, proposed["proposal"]["id"]) == "QUEUED"


async def test_posts_count_toward_the_rate_limit_and_decide_nothing_beyond_it(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    proposed, created = await linked(gql, world)
    for _ in range(30):
        assert (await gql.http.get(created["path"])).status_code == 200
    before = await counts(gql)
    refused = await post(gql, created["path"], form(created["link"]["payloadDigest"]))
    assert refused.status_code == 429
    assert await counts(gql) == before
    assert await proposal_state(gql, proposed["proposal"]["id"]) == "APPROVAL_REQUIRED"


def test_the_link_rate_limiter_remembers_a_bounded_number_of_clients() -> None:
    limiter = RateLimiter(1 / 60, 1, max_keys=2)
    allowed = [limiter.retry_after(c) is None for c in ("a", "a", "b", "c")]
    assert allowed == [True, False, True, True]
    assert limiter.retry_after("a") is None  # forgotten as the least recently seen: a full bucket
    assert limiter.retry_after("c") is not None


async def switch_off(gql: GraphQLClient, name: str, how: str) -> None:
    """Take the actor's way in, as ``signoff actor disable`` or ``signoff token revoke
    --name`` does."""
    async with WorkMaker(gql.sessionmaker)() as work:
        if how == "disabled":
            await disable_actor(work=work, name=name)
        else:
            await revoke_actor_tokens(work=work, name=name)


@pytest.mark.parametrize("how", ["disabled", "revoked"])
async def test_a_link_stops_deciding_once_its_reviewer_loses_access(
    gql: GraphQLClient, how: str
) -> None:
    """The link is revoked with its reviewer's access: its page says it no longer works,
    without the payload, and its POST decides nothing."""
    world = await build_world(gql)
    proposed, created = await linked(
        gql, world, propose={"payload": {"amount": 4321, "currency": "EUR"}}
    )
    await switch_off(gql, "reviewer-0", how)
    before = await counts(gql)
    shown = await gql.http.get(created["path"])
    assert shown.status_code == 410 and "4321" not in shown.text
    digest = created["link"]["payloadDigest"]
    assert digest not in shown.text
    refused = await post(gql, created["path"], form(digest))
    assert refused.status_code == 410
    assert await counts(gql) == before
    assert await proposal_state(gql, proposed["proposal"]["id"]) == "APPROVAL_REQUIRED"
    async with gql.sessionmaker() as session:
        [link] = (await session.exec(select(ApprovalLink))).all()
    assert link.state == "REVOKED"
