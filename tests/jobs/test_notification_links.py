"""Approval links in notifications, to real loopback receivers: a channel addressed to one
reviewer gets a single-use link for them in each notification, whose token only the sent
request carries (the database keeps its hash); a retry revokes the link sent before; a
channel without the setting gets no link (docs/design.md section 5.6)."""

from __future__ import annotations

import hashlib
import os
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlmodel import col, select

from signoff import clock
from signoff.config import Settings
from signoff.jobs.delivery import send_reminders
from signoff.jobs.notifications import send_notifications
from signoff.models import ApprovalLink, AuditEvent, Notification, Role
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_notifications import add_channel
from tests.processes import LOOPBACK_NETWORKS
from tests.receivers import Answer, Received, Receiver, serve
from tests.schema.test_approval_links import (
    REMOVE_MEMBER,
    actor_id,
    counts,
    form,
    post,
    proposal_state,
    switch_off,
)

PUBLIC_URL = "https://signoff.example/review"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        embedded_worker=False,
        secret_key=os.environ["SIGNOFF_SECRET_KEY"],
        audit_signing_key=os.environ["SIGNOFF_AUDIT_SIGNING_KEY"],
        delivery_allow_networks=LOOPBACK_NETWORKS,
        public_url=PUBLIC_URL,
    )


async def link_channel(
    gql: GraphQLClient, world: World, url: str, kind: str = "WEBHOOK", **extra: Any
) -> dict[str, Any]:
    """A channel addressed to the world's first reviewer, with approval links for an hour."""
    return await add_channel(
        gql,
        world.admin,
        world.queue_id,
        url,
        kind=kind,
        reviewerId=await actor_id(gql, world.reviewers[0]),
        approvalLinkTtlSeconds=3600,
        **extra,
    )


def link_path(received: Received) -> str:
    """The path of the link a webhook notification carries (it starts with the public URL)."""
    url = str(received.body["approval_link"]["url"])
    assert url.startswith(PUBLIC_URL + "/links/")
    return urlsplit(url).path.removeprefix(urlsplit(PUBLIC_URL).path)


async def stored_text(worker: Worker) -> str:
    """Everything the database holds about notifications, links and their audit, as text."""
    async with worker.services.sessionmaker() as session:
        rows: list[Any] = [
            *(await session.exec(select(Notification))).all(),
            *(await session.exec(select(ApprovalLink))).all(),
            *(await session.exec(select(AuditEvent))).all(),
        ]
    return " ".join(repr(vars(row)) for row in rows)


async def stored_rows(worker: Worker, model: type[Any]) -> list[Any]:
    async with worker.services.sessionmaker() as session:
        return list((await session.exec(select(model))).all())


async def links(worker: Worker) -> list[ApprovalLink]:
    async with worker.services.sessionmaker() as session:
        found = await session.exec(select(ApprovalLink).order_by(col(ApprovalLink.created_at)))
        return list(found.all())


async def test_a_reviewer_channel_gets_a_link_that_shows_then_decides_once(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql)
        added = await link_channel(gql, world, receiver.url)
        assert added["channel"]["approvalLinkTtlSeconds"] == 3600
        receiver.secret = added["signingSecret"]
        proposed = await world.propose({"amount": 654, "currency": "EUR"})
        assert await send_notifications(worker.ctx) == 1
    [got] = receiver.requests
    assert receiver.refused == 0
    reviewer = await actor_id(gql, world.reviewers[0])
    assert got.body["approval_link"]["reviewer"]["id"] == reviewer
    path = link_path(got)
    token = path.removeprefix("/links/")

    [link] = await links(worker)
    assert (link.reviewer_id, link.state) == (reviewer, "ACTIVE")
    assert link.payload_digest == proposed["proposal"]["payloadDigest"]
    assert link.token_hash == hashlib.sha256(token.encode()).hexdigest()
    stored = await stored_text(worker)
    assert link.token_hash in stored and token not in stored  # only its hash is kept

    before = await counts(gql)
    page = await gql.http.get(path)
    assert page.status_code == 200
    assert proposed["proposal"]["payloadDigest"] in page.text
    assert "&quot;amount&quot;: 654" in page.text
    assert await counts(gql) == before  # opening it decides nothing

    decided = await post(gql, path, form(link.payload_digest))
    assert decided.status_code == 200, decided.text
    assert await proposal_state(gql, proposed["proposal"]["id"]) == "QUEUED"
    again = await post(gql, path, form(link.payload_digest))
    assert again.status_code == 410 and "already been used" in again.text


async def test_a_slack_channel_shows_the_link_as_a_button(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver(signed=False)) as slack:
        world = await build_world(gql)
        await link_channel(gql, world, slack.url, kind="SLACK")
        await world.propose()
        assert await send_notifications(worker.ctx) == 1
    [got] = slack.requests
    [section, actions, note] = got.body["blocks"]
    [button] = actions["elements"]
    assert button["type"] == "button" and button["url"].startswith(PUBLIC_URL + "/links/")
    assert section["text"]["text"].startswith("[Payments] New task:")
    assert f"<{button['url']}|Review and decide>" in got.body["text"]
    assert "Opening it decides nothing" in note["elements"][0]["text"]
    path = urlsplit(button["url"]).path.removeprefix("/review")
    assert (await gql.http.get(path)).status_code == 200


async def test_a_retry_revokes_the_link_sent_before(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver([Answer(503), Answer(200)])) as receiver:
        world = await build_world(gql)
        receiver.secret = (await link_channel(gql, world, receiver.url))["signingSecret"]
        proposed = await world.propose()
        assert await send_notifications(worker.ctx) == 1  # answered 503
        [notification] = await stored_rows(worker, Notification)
        # The retry is a job of its own, deferred to its time.
        assert worker.jobs.notifications == [
            (f"notify:{notification.id}:2", notification.next_attempt_at)
        ]
        frozen_clock.advance(15)  # the first backoff, jitter pinned to its upper bound
        assert await send_notifications(worker.ctx) == 1
    first, second = (link_path(r) for r in receiver.requests)
    assert first != second
    old, new = await links(worker)
    assert (old.state, new.state) == ("REVOKED", "ACTIVE")
    assert old.notification_id == new.notification_id is not None

    refused = await gql.http.get(first)
    assert refused.status_code == 410 and "REVOKED" in refused.text
    refused_post = await post(gql, first, form(old.payload_digest))
    assert refused_post.status_code == 410
    assert await proposal_state(gql, proposed["proposal"]["id"]) == "APPROVAL_REQUIRED"
    decided = await post(gql, second, form(new.payload_digest))
    assert decided.status_code == 200, decided.text
    assert await proposal_state(gql, proposed["proposal"]["id"]) == "QUEUED"

    async with worker.services.sessionmaker() as session:
        revoked = (
            await session.exec(
                select(AuditEvent).where(
                    AuditEvent.target_id == old.id, AuditEvent.action == "approval_link.revoked"
                )
            )
        ).one()
    assert revoked.actor_id is None  # the system, not a person
    assert revoked.details == {"reason": "replaced", "notification_id": old.notification_id}


async def test_a_channel_without_the_setting_sends_no_link(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver(signed=False)) as plain, serve(Receiver(signed=False)) as personal:
        world = await build_world(gql)
        await add_channel(gql, world.admin, world.queue_id, plain.url, kind="SLACK")
        await add_channel(  # addressed to a reviewer, but without approvalLinkTtlSeconds
            gql,
            world.admin,
            world.queue_id,
            personal.url,
            kind="SLACK",
            reviewerId=await actor_id(gql, world.reviewers[0]),
        )
        await world.propose()
        assert await send_notifications(worker.ctx) == 2
    for received in (*plain.requests, *personal.requests):
        assert set(received.body) == {"text"} and "/links/" not in received.body["text"]
    assert await links(worker) == []


async def test_no_link_for_a_reviewer_who_may_no_longer_decide(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver(signed=False)) as slack:
        world = await build_world(gql)
        await link_channel(gql, world, slack.url, kind="SLACK")
        await world.propose()
        reviewer = await actor_id(gql, world.reviewers[0])
        await gql(REMOVE_MEMBER, {"q": world.queue_id, "a": reviewer}, world.admin)
        assert await send_notifications(worker.ctx) == 1
    [got] = slack.requests
    assert "blocks" not in got.body and "/links/" not in got.body["text"]
    assert await links(worker) == []


async def test_adding_a_link_channel_is_checked(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    reviewer = await actor_id(gql, world.reviewers[0])
    outsider = await actor_id(gql, await gql.token(Role.REVIEWER, name="x", queues=[]))
    cases = [
        ({"approvalLinkTtlSeconds": 3600}, "VALIDATION_FAILED"),  # no reviewer to bind to
        ({"reviewerId": reviewer, "approvalLinkTtlSeconds": 72 * 3600 + 1}, "VALIDATION_FAILED"),
        ({"reviewerId": reviewer, "approvalLinkTtlSeconds": 59}, "VALIDATION_FAILED"),
        ({"reviewerId": outsider, "approvalLinkTtlSeconds": 3600}, "VALIDATION_FAILED"),
        ({"reviewerId": "no-such-actor"}, "NOT_FOUND"),
    ]
    for extra, code in cases:
        refused = await gql.error(
            """mutation($input: AddNotificationChannelInput!) {
                 addNotificationChannel(input: $input) { channel { id } } }""",
            {
                "input": {
                    "queueId": world.queue_id,
                    "kind": "SLACK",
                    "url": "https://hooks.example/x",
                    **extra,
                }
            },
            world.admin,
        )
        assert refused.code == code, extra


async def test_a_reminder_replaces_the_link_its_channel_sent_before(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    """Each channel keeps at most one usable link per task; another channel's is untouched."""
    async with serve(Receiver(signed=False)) as first, serve(Receiver(signed=False)) as second:
        world = await build_world(gql, queue_options={"reminderPercents": [50]})
        await link_channel(gql, world, first.url, kind="SLACK")
        await add_channel(
            gql,
            world.admin,
            world.queue_id,
            second.url,
            kind="SLACK",
            reviewerId=await actor_id(gql, world.reviewers[1]),
            approvalLinkTtlSeconds=3600,
        )
        await world.propose(expiresInSeconds=100)
        assert await send_notifications(worker.ctx) == 2
        frozen_clock.advance(50)
        assert await send_reminders(worker.ctx) == 1
        assert await send_notifications(worker.ctx) == 2
    by_reviewer: dict[str, list[str]] = {}
    for link in await links(worker):
        by_reviewer.setdefault(link.reviewer_id, []).append(str(link.state))
    assert sorted(by_reviewer.values()) == [["REVOKED", "ACTIVE"], ["REVOKED", "ACTIVE"]]
    created, due_soon = (r.body["blocks"][1]["elements"][0]["url"] for r in first.requests)
    assert (await gql.http.get(urlsplit(created).path.removeprefix("/review"))).status_code == 410
    assert (await gql.http.get(urlsplit(due_soon).path.removeprefix("/review"))).status_code == 200


@pytest.mark.parametrize("how", ["disabled", "revoked"])
async def test_no_link_for_a_reviewer_who_lost_their_access(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock, how: str
) -> None:
    async with serve(Receiver(signed=False)) as slack:
        world = await build_world(gql)
        await link_channel(gql, world, slack.url, kind="SLACK")
        await world.propose()
        await switch_off(gql, "reviewer-0", how)
        assert await send_notifications(worker.ctx) == 1
    [got] = slack.requests
    assert "blocks" not in got.body and "/links/" not in got.body["text"]
    assert await links(worker) == []
