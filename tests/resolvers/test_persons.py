"""One person, one vote (issue 41, item 3): someone who signs in through the identity
provider and also holds an old reviewer token is one person once an administrator links
the two actors, for the quorum and for four eyes; ``signoff serve`` names the token
actors linked to no one while sign-in is on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from signoff.errors import AlreadyDecided, AmenderApprovalForbidden, SignoffError
from signoff.models import Decision, Proposal, Role
from signoff.resolvers.access.actors import authenticate
from signoff.resolvers.access.identities import Claimed, sign_in
from signoff.resolvers.access.persons import link_actor, unlink_actor, unlinked_token_people
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.approval.approvals import decide_proposal
from signoff.resolvers.core.work import WorkMaker
from tests.helpers import GraphQLClient, World, build_world
from tests.live import Server
from tests.oidc.provider import MAPPING
from tests.schema.test_amendments import amend

ISSUER = "https://id.example.com/"
ALICE_SUB = "00u-alice"


async def signed_in(gql: GraphQLClient, world: World, name: str, subject: str) -> Viewer:
    """The actor the provider's claims for ``subject`` make, reviewer of the world's queue."""
    who = Claimed(
        issuer=ISSUER,
        subject=subject,
        name=name,
        role=Role.REVIEWER,
        queues=frozenset({world.queue_slug}),
    )
    viewer, _ = await sign_in(work=WorkMaker(gql.sessionmaker), who=who)
    return viewer


async def as_token(gql: GraphQLClient, token: str) -> Viewer:
    async with gql.sessionmaker() as session:
        return await authenticate(session=session, token=token)


async def approve(gql: GraphQLClient, viewer: Viewer, proposal_id: str) -> Proposal:
    """Approve the proposal's digest as it stands, as ``viewer``; the proposal after."""
    async with gql.sessionmaker() as session:
        proposal = await session.get(Proposal, proposal_id)
        assert proposal is not None
    async with WorkMaker(gql.sessionmaker)() as work:
        decided = await decide_proposal(
            work=work,
            viewer=viewer,
            proposal_id=proposal_id,
            decision=Decision.APPROVED,
            payload_digest=proposal.payload_digest,
        )
        await work.commit()
    return decided.proposal


async def link(gql: GraphQLClient, name: str, **to: Any) -> list[str]:
    async with WorkMaker(gql.sessionmaker)() as work:
        linked = await link_actor(work=work, name=name, **to)
    return linked.recounted


async def refused(gql: GraphQLClient, viewer: Viewer, proposal_id: str) -> SignoffError:
    with pytest.raises(SignoffError) as caught:
        await approve(gql, viewer, proposal_id)
    return caught.value


async def test_a_person_with_a_token_and_a_sign_in_approves_once(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=2, required_approvals=2, reviewer_names="alice")
    alice_token = await as_token(gql, world.reviewers[0])  # the actor "alice-0"
    # Linked before the first sign-in, by the issuer and subject the provider will send.
    await link(gql, alice_token.actor.name, issuer=ISSUER, subject=ALICE_SUB)
    alice_ng = await signed_in(gql, world, "Alice Ng", ALICE_SUB)
    proposal_id = (await world.propose())["proposal"]["id"]

    assert (await approve(gql, alice_token, proposal_id)).approval_count == 1
    twice = await refused(gql, alice_ng, proposal_id)
    assert isinstance(twice, AlreadyDecided) and alice_token.actor.name in twice.message

    bob = await as_token(gql, world.reviewers[1])
    assert (await approve(gql, bob, proposal_id)).state == "QUEUED"


async def test_linking_after_both_approved_counts_the_person_once(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=3, required_approvals=3, reviewer_names="r")
    alice_token, bob, carol = [await as_token(gql, token) for token in world.reviewers]
    alice_ng = await signed_in(gql, world, "Alice Ng", "00u-alice-2")
    proposal_id = (await world.propose())["proposal"]["id"]
    await approve(gql, alice_token, proposal_id)
    assert (await approve(gql, alice_ng, proposal_id)).approval_count == 2

    assert await link(gql, alice_token.actor.name, to="Alice Ng") == [proposal_id]

    assert (await approve(gql, bob, proposal_id)).state == "APPROVAL_REQUIRED"
    assert (await approve(gql, carol, proposal_id)).state == "QUEUED"


async def test_an_actor_linked_to_the_amender_may_not_approve_their_revision(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql, reviewers=3, required_approvals=1, reviewer_names="am")
    amender, other, third = [await as_token(gql, token) for token in world.reviewers]
    await link(gql, other.actor.name, to=amender.actor.name)
    proposed = await world.propose()
    now = (await amend(world, world.reviewers[0], proposed["proposal"], patch={"amount": 9}))[
        "proposal"
    ]
    assert isinstance(await refused(gql, other, now["id"]), AmenderApprovalForbidden)

    async with WorkMaker(gql.sessionmaker)() as work:
        await unlink_actor(work=work, name=other.actor.name)
    assert (await approve(gql, third, now["id"])).state == "QUEUED"


async def test_serve_warns_about_token_people_linked_to_no_one(
    gql: GraphQLClient, serve: Any, tmp_path: Path
) -> None:
    world = await build_world(gql, reviewers=2, reviewer_names="tok")
    named = [(await as_token(gql, token)).actor.name for token in world.reviewers]
    await link(gql, named[1], issuer=ISSUER, subject="00u-someone")
    async with gql.sessionmaker() as session:
        unlinked = await unlinked_token_people(session)
    assert named[0] in unlinked and named[1] not in unlinked
    assert "admin" in unlinked and "agent" not in unlinked

    claims = tmp_path / "claims.txt"
    claims.write_text(MAPPING)
    server: Server = await serve(
        SIGNOFF_OIDC_ISSUER="http://127.0.0.1:9",
        SIGNOFF_OIDC_CLIENT_ID="signoff-console",
        SIGNOFF_OIDC_CLAIMS_FILE=str(claims),
    )
    [warning] = [line for line in server.log.read_text().splitlines() if "linked to no" in line]
    assert named[0] in warning and named[1] not in warning and "signoff actor link" in warning
