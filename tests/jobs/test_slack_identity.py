"""Who clicked, through the identity provider (docs/slack.md, "Who clicked"): a Slack user
no admin linked decides as the actor who signed in through the provider with the email
address of their Slack profile (``users.info`` on the fake Slack), only if the provider
said it verified that address, and only if no other actor signed in with it too."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from signoff.config import Settings
from signoff.models import Actor, Approval, OidcIdentity
from signoff.models.actor import email_hash
from signoff.oidc_settings import parse_claim_mapping
from signoff.resolvers.access.identities import claimed
from tests.fake_slack import FakeSlack, serve_slack
from tests.helpers import GraphQLClient
from tests.jobs.conftest import Worker
from tests.jobs.test_slack_app import (
    BOT_TOKEN,
    SECRET,
    Setup,
    buttons,
    click,
    interact,
    posted,
    refused_click,
    state,
)
from tests.oidc.provider import MAPPING, TestProvider

VIEWER = "query { viewer { actor { name role } } }"
REVIEWERS_GROUP = "signoff-payments-reviewers"


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[TestProvider]:
    idp = TestProvider(tmp_path / "idp")
    idp.start()
    yield idp
    idp.stop()


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with serve_slack() as fake:
        yield fake


@pytest.fixture
def settings(settings: Settings, slack: FakeSlack, provider: TestProvider) -> Settings:
    """The Slack app on the fake Slack, and sign-in through the test provider."""
    return dataclasses.replace(
        settings,
        slack_bot_token=BOT_TOKEN,
        slack_signing_secret=SECRET,
        slack_api_url=slack.url,
        oidc=provider.settings(),
    )


async def signs_in(
    gql: GraphQLClient, provider: TestProvider, subject: str, name: str, **email: Any
) -> None:
    """``subject`` uses the API with a token of the provider whose claims carry ``email``
    (``email``, ``email_verified``), as a reviewer of the ``payments`` queue."""
    token = provider.sign({"sub": subject, "name": name, "groups": [REVIEWERS_GROUP], **email})
    assert (await gql(VIEWER, token=token))["viewer"]["actor"]["role"] == "REVIEWER"


def in_slack(slack: FakeSlack, user: str, address: str, **profile: Any) -> None:
    """A Slack user as ``users.info`` describes them."""
    slack.users[user] = {
        "id": user,
        "is_bot": False,
        "deleted": False,
        "is_email_confirmed": True,
        "profile": {"email": address, "real_name": user},
        **profile,
    }


async def payments(gql: GraphQLClient, worker: Worker, slack: FakeSlack) -> Setup:
    """A proposal posted in Slack from the ``payments`` queue the claim mapping names."""
    return await posted(gql, worker, slack, slug="payments")


async def test_a_reviewer_who_signed_in_decides_from_slack_by_their_verified_email(
    gql: GraphQLClient, worker: Worker, slack: FakeSlack, provider: TestProvider
) -> None:
    setup = await payments(gql, worker, slack)
    await signs_in(
        gql, provider, "alice", "Alice Ng", email="alice@example.com", email_verified=True
    )
    # A later token that says nothing of email keeps what sign-in stored.
    await signs_in(gql, provider, "alice", "Alice Ng")
    in_slack(slack, "UALICE0001", " Alice@Example.com")

    approve = buttons(setup.post)["signoff_approve"]
    answer = await interact(gql.http, click("UALICE0001", approve, setup.post))
    assert answer.status_code == 200 and slack.of("chat.postEphemeral") == []
    assert (await state(gql, setup.world, setup.proposal["id"]))["state"] == "QUEUED"
    async with gql.sessionmaker() as session:
        [approval] = (await session.exec(select(Approval))).all()
        decider = await session.get(Actor, approval.approver_id)
        [identity] = (await session.exec(select(OidcIdentity))).all()
    assert decider is not None and decider.name == "Alice Ng"
    assert decider.slack_user_id is None  # matched, not linked
    assert identity.email_hash == email_hash("alice@example.com")  # no address stored
    [asked] = slack.of("users.info")
    assert (asked.arguments["user"], asked.token) == ("UALICE0001", BOT_TOKEN)


async def test_an_email_the_provider_did_not_verify_matches_no_one(
    gql: GraphQLClient, worker: Worker, slack: FakeSlack, provider: TestProvider
) -> None:
    setup = await payments(gql, worker, slack)
    await signs_in(gql, provider, "bob", "Bob Ruiz", email="bob@example.com", email_verified=True)
    # The provider now says it has not verified the address: what was stored goes.
    await signs_in(gql, provider, "bob", "Bob Ruiz", email="bob@example.com", email_verified=False)
    in_slack(slack, "UBOB000001", "bob@example.com")
    words = await refused_click(gql.http, slack, setup, "UBOB000001")
    assert "sign in to Signoff once" in words and "signoff actor link-slack" in words
    assert (await state(gql, setup.world, setup.proposal["id"]))["approvalCount"] == 0


async def test_an_unknown_email_or_an_unconfirmed_slack_address_is_refused_in_words(
    gql: GraphQLClient, worker: Worker, slack: FakeSlack, provider: TestProvider
) -> None:
    setup = await payments(gql, worker, slack)
    await signs_in(
        gql, provider, "alice", "Alice Ng", email="alice@example.com", email_verified=True
    )
    in_slack(slack, "UNOBODY001", "nobody@example.com")
    in_slack(slack, "UALICE0002", "alice@example.com", is_email_confirmed=False)
    for user in ("UNOBODY001", "UALICE0002", "UNOTINSLACK"):
        slack.calls.clear()
        words = await refused_click(gql.http, slack, setup, user)
        assert "Your Slack account is not linked to a Signoff reviewer" in words
    assert (await state(gql, setup.world, setup.proposal["id"]))["approvalCount"] == 0


async def test_an_email_two_actors_signed_in_with_is_refused_as_ambiguous(
    gql: GraphQLClient, worker: Worker, slack: FakeSlack, provider: TestProvider
) -> None:
    setup = await payments(gql, worker, slack)
    for subject in ("alice", "alice-old-account"):
        await signs_in(
            gql, provider, subject, "Alice Ng", email="alice@example.com", email_verified=True
        )
    in_slack(slack, "UALICE0001", "alice@example.com")
    words = await refused_click(gql.http, slack, setup, "UALICE0001")
    assert "More than one Signoff account" in words
    # Reject asks the same question before it opens the modal.
    slack.calls.clear()
    words = await refused_click(gql.http, slack, setup, "UALICE0001", "signoff_reject")
    assert "More than one Signoff account" in words and slack.of("views.open") == []
    assert (await state(gql, setup.world, setup.proposal["id"]))["approvalCount"] == 0


@pytest.mark.parametrize(
    ("email", "said", "stored"),
    [
        ({"email": "a@example.com", "email_verified": True}, True, email_hash("a@example.com")),
        ({"email": "a@example.com", "email_verified": "true"}, True, email_hash("a@example.com")),
        ({"email": "a@example.com", "email_verified": False}, True, None),
        ({"email": "a@example.com"}, True, None),
        ({"email_verified": True}, False, None),
        ({}, False, None),
    ],
)
def test_only_a_verified_email_is_kept(
    email: dict[str, Any], said: bool, stored: str | None
) -> None:
    claims = {"sub": "alice", "groups": [REVIEWERS_GROUP], **email}
    who = claimed("https://id.example.com/", claims, parse_claim_mapping(MAPPING))
    assert (who.email_said, who.email_hash) == (said, stored)
