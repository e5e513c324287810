"""Reviewers decide in Slack (docs/design.md section 5.6, docs/slack.md): the Slack app
posts each approval task through the Web API (a fake on loopback that records every
call), Slack's signed interactions decide through the same rule as the API, and every
message is brought up to date as its proposal moves, by whatever path."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import json
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest
from httpx import AsyncClient, Response
from sqlmodel import select

from signoff import clock
from signoff.config import Settings
from signoff.jobs.delivery import expire_due_proposals
from signoff.jobs.notifications import send_notifications
from signoff.models import Actor, Approval, Notification, Proposal, Role
from signoff.resolvers.core.work import WorkMaker
from signoff.resolvers.reach.slack_actions import link_slack_user
from tests.fake_slack import Call, FakeSlack, serve_slack
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_notifications import notifications
from tests.readme_shell import page
from tests.receivers import Receiver, serve
from tests.schema.test_amendments import AMEND, amendment

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_TOKEN = "xoxb-test-token"
ACTIONS = "/integrations/slack/actions"
ADD_CHANNEL = """mutation($input: AddNotificationChannelInput!) {
  addNotificationChannel(input: $input) { signingSecret channel { id kind url } } }"""
STATE = "query($id: ID!) { proposal(id: $id) { state approvalCount revision } }"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with serve_slack() as fake:
        yield fake


@pytest.fixture
def settings(settings: Settings, slack: FakeSlack) -> Settings:
    """The app and the worker talk to the fake Slack, with the app's secret and token."""
    return dataclasses.replace(
        settings,
        slack_bot_token=BOT_TOKEN,
        slack_signing_secret=SECRET,
        slack_api_url=slack.url,
    )


def signed(body: str, timestamp: int, secret: str = SECRET) -> dict[str, str]:
    """The headers Slack sends: ``v0=`` HMAC-SHA256 of ``v0:<timestamp>:<body>``."""
    base = f"v0:{timestamp}:{body}".encode()
    signature = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {
        "content-type": "application/x-www-form-urlencoded",
        "x-slack-request-timestamp": str(timestamp),
        "x-slack-signature": signature,
    }


async def interact(
    client: AsyncClient,
    payload: dict[str, Any],
    *,
    age_seconds: int = 0,
    secret: str = SECRET,
) -> Response:
    body = "payload=" + quote(json.dumps(payload))
    timestamp = int(clock.now().timestamp()) - age_seconds
    return await client.post(ACTIONS, content=body, headers=signed(body, timestamp, secret))


def click(user: str, button: dict[str, Any], post: Call) -> dict[str, Any]:
    """A ``block_actions`` payload as Slack posts it for a click on ``button``."""
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": "T1"},
        "api_app_id": "A1",
        "team": {"id": "T1", "domain": "example"},
        "trigger_id": f"trigger-{user}",
        "container": {"type": "message", "channel_id": post.arguments["channel"]},
        "channel": {"id": post.arguments["channel"], "name": "reviews"},
        "message": {"type": "message", "text": post.arguments["text"]},
        "response_url": "https://hooks.slack.com/actions/T1/1/x",
        "actions": [
            {
                "type": "button",
                "action_id": button["action_id"],
                "block_id": "b",
                "value": button.get("value", ""),
                "action_ts": "1700000000.1",
            }
        ],
    }


def buttons(call: Call) -> dict[str, dict[str, Any]]:
    """The message's buttons by action id."""
    return {
        element["action_id"]: element
        for block in call.arguments["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    }


def shown_text(call: Call) -> str:
    return json.dumps(call.arguments["blocks"])


async def linked(gql: GraphQLClient, app_work: WorkMaker, name: str, slack_user: str) -> None:
    async with app_work() as work:
        await link_slack_user(work=work, name=name, slack_user_id=slack_user)


@dataclasses.dataclass
class Setup:
    world: World
    proposal: dict[str, Any]
    post: Call


async def posted(
    gql: GraphQLClient, worker: Worker, slack: FakeSlack, **world_options: Any
) -> Setup:
    """A world whose queue has a SLACK_APP channel (with the payload), reviewer-0 linked to
    U0 and reviewer-1 to U1, and one proposal posted."""
    world = await build_world(gql, summaryField="amount", **world_options)
    await gql(
        ADD_CHANNEL,
        {
            "input": {
                "queueId": world.queue_id,
                "kind": "SLACK_APP",
                "slackChannel": "C0REVIEWS",
                "includePayload": True,
            }
        },
        world.admin,
    )
    for i in range(2):
        await linked(gql, worker.services.work, f"reviewer-{i}", f"UREVIEW{i}")
    proposal = (await world.propose({"amount": 1200, "currency": "EUR"}))["proposal"]
    assert await send_notifications(worker.ctx) == 1
    [post] = slack.of("chat.postMessage")
    return Setup(world, proposal, post)


async def state(gql: GraphQLClient, world: World, proposal_id: str) -> dict[str, Any]:
    result: dict[str, Any] = (await gql(STATE, {"id": proposal_id}, world.admin))["proposal"]
    return result


async def test_a_reviewer_approves_from_slack_and_the_message_shows_who_did(
    gql: GraphQLClient,
    client: AsyncClient,
    worker: Worker,
    slack: FakeSlack,
    frozen_clock: clock.FrozenClock,
) -> None:
    setup = await posted(gql, worker, slack)
    post, proposal = setup.post, setup.proposal
    assert post.token == BOT_TOKEN and post.arguments["channel"] == "C0REVIEWS"
    text = shown_text(post)
    for shown in ("refund.create", "agent", "*amount*", "1200", "EUR", proposal["expiresAt"][:19]):
        assert shown in text
    approve = buttons(post)
    assert set(approve) == {"signoff_approve", "signoff_reject", "signoff_open"}
    value = json.loads(approve["signoff_approve"]["value"])
    assert value == {"p": proposal["id"], "d": proposal["payloadDigest"]}

    answer = await interact(client, click("UREVIEW0", approve["signoff_approve"], post))
    assert answer.status_code == 200
    assert (await state(gql, setup.world, proposal["id"]))["state"] == "QUEUED"
    assert slack.of("chat.postEphemeral") == []
    assert slack.of("users.info") == []  # an explicit link: Slack is not asked who it is

    assert await send_notifications(worker.ctx) == 1  # the message's update
    [update] = slack.of("chat.update")
    [sent_post] = [n for n in await notifications(worker) if n.event == "task.created"]
    assert (update.arguments["channel"], update.arguments["ts"]) == (
        sent_post.slack_channel,
        sent_post.slack_ts,
    )
    assert set(buttons(update)) == {"signoff_open"}
    assert "*Approved* by reviewer-0" in shown_text(update)


async def test_reject_asks_for_a_reason_in_a_modal_whose_submission_rejects(
    gql: GraphQLClient,
    client: AsyncClient,
    worker: Worker,
    slack: FakeSlack,
    frozen_clock: clock.FrozenClock,
) -> None:
    setup = await posted(gql, worker, slack)
    reject = buttons(setup.post)["signoff_reject"]
    assert (await interact(client, click("UREVIEW1", reject, setup.post))).status_code == 200
    [opened] = slack.of("views.open")
    assert opened.arguments["trigger_id"] == "trigger-UREVIEW1"
    view = opened.arguments["view"]
    assert (await state(gql, setup.world, setup.proposal["id"]))["state"] == "APPROVAL_REQUIRED"

    submission = {
        "type": "view_submission",
        "user": {"id": "UREVIEW1"},
        "trigger_id": "t2",
        "view": {
            "id": "V1",
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "state": {
                "values": {
                    "reason": {
                        "reason_input": {"type": "plain_text_input", "value": "Wrong <customer>"}
                    }
                }
            },
        },
    }
    answer = await interact(client, submission)
    assert answer.status_code == 200 and answer.content == b""  # the modal closes
    assert (await state(gql, setup.world, setup.proposal["id"]))["state"] == "REJECTED"
    async with gql.sessionmaker() as session:
        [approval] = (await session.exec(select(Approval))).all()
    assert (approval.decision, approval.reason) == ("REJECTED", "Wrong <customer>")
    assert await send_notifications(worker.ctx) == 1
    [update] = slack.of("chat.update")
    assert "*Rejected* by reviewer-1: Wrong &lt;customer&gt;" in shown_text(update)


async def test_a_modal_submission_that_is_refused_shows_why_in_the_modal(
    gql: GraphQLClient,
    client: AsyncClient,
    worker: Worker,
    slack: FakeSlack,
    frozen_clock: clock.FrozenClock,
) -> None:
    setup = await posted(gql, worker, slack)
    await setup.world.decide(setup.world.reviewers[0], setup.proposal)
    value = buttons(setup.post)["signoff_reject"]["value"]
    submission = {
        "type": "view_submission",
        "user": {"id": "UREVIEW1"},
        "view": {
            "callback_id": "signoff_reject_modal",
            "private_metadata": value,
            "state": {"values": {"reason": {"reason_input": {"value": "Too late?"}}}},
        },
    }
    answer = await interact(client, submission)
    assert answer.json()["response_action"] == "errors"
    assert "no longer waits for approval" in answer.json()["errors"]["reason"]


@pytest.mark.parametrize(
    ("age_seconds", "secret"), [(301, SECRET), (0, "not-the-secret"), (-301, SECRET)]
)
async def test_a_stale_or_badly_signed_interaction_is_refused_and_decides_nothing(
    gql: GraphQLClient,
    client: AsyncClient,
    worker: Worker,
    slack: FakeSlack,
    frozen_clock: clock.FrozenClock,
    age_seconds: int,
    secret: str,
) -> None:
    setup = await posted(gql, worker, slack)
    payload = click("UREVIEW0", buttons(setup.post)["signoff_approve"], setup.post)
    answer = await interact(client, payload, age_seconds=age_seconds, secret=secret)
    assert answer.status_code == 401
    unsigned = await client.post(ACTIONS, content="payload=" + quote(json.dumps(payload)))
    assert unsigned.status_code == 401
    assert (await state(gql, setup.world, setup.proposal["id"]))["state"] == "APPROVAL_REQUIRED"
    assert slack.of("chat.postEphemeral") == []


async def refused_click(
    client: AsyncClient, slack: FakeSlack, setup: Setup, user: str, button: str = "signoff_approve"
) -> str:
    """Click as ``user``; the ephemeral answer's text (only they see it)."""
    answer = await interact(client, click(user, buttons(setup.post)[button], setup.post))
    assert answer.status_code == 200
    [ephemeral] = slack.of("chat.postEphemeral")
    assert (ephemeral.arguments["user"], ephemeral.arguments["channel"]) == (user, "C0REVIEWS")
    text: str = ephemeral.arguments["text"]
    return text


async def test_an_unknown_slack_user_is_told_how_to_be_linked(
    gql: GraphQLClient,
    client: AsyncClient,
    worker: Worker,
    slack: FakeSlack,
    frozen_clock: clock.FrozenClock,
) -> None:
    setup = await posted(gql, worker, slack)
    assert "signoff actor link-slack" in await refused_click(client, slack, setup, "U9STRANGER")
    assert "signoff actor link-slack" in await _second(client, slack, setup, "U9STRANGER")
    assert slack.of("views.open") == []  # Reject opens no modal for them
    assert (await state(gql, setup.world, setup.proposal["id"]))["state"] == "APPROVAL_REQUIRED"


async def _second(client: AsyncClient, slack: FakeSlack, setup: Setup, user: str) -> str:
    slack.calls.clear()
    return await refused_click(client, slack, setup, user, "signoff_reject")


async def test_a_linked_user_who_is_not_a_reviewer_of_the_queue_is_refused(
    gql: GraphQLClient,
    client: AsyncClient,
    worker: Worker,
    slack: FakeSlack,
    frozen_clock: clock.FrozenClock,
) -> None:
    setup = await posted(gql, worker, slack)
    await gql.token(Role.REVIEWER, name="outsider", queues=[])
    await linked(gql, worker.services.work, "outsider", "UOUTSIDE7")
    words = await refused_click(client, slack, setup, "UOUTSIDE7")
    assert "not a reviewer of its queue" in words
    assert (await state(gql, setup.world, setup.proposal["id"]))["approvalCount"] == 0


async def test_the_proposer_clicking_is_refused(
    gql: GraphQLClient,
    client: AsyncClient,
    worker: Worker,
    slack: FakeSlack,
    frozen_clock: clock.FrozenClock,
) -> None:
    setup = await posted(gql, worker, slack)
    # The admin proposes (admins decide any queue), so four eyes is what refuses it.
    data = await gql(
        "mutation($i: ProposeActionInput!) { proposeAction(input: $i) { proposal { id } } }",
        {
            "i": {
                "targetId": setup.world.target_id,
                "actionCode": "refund.create",
                "operationKey": "own",
                "payload": {"amount": 5, "currency": "EUR"},
            }
        },
        setup.world.admin,
    )
    own = data["proposeAction"]["proposal"]["id"]
    assert await send_notifications(worker.ctx) == 1
    own_post = slack.of("chat.postMessage")[-1]
    await linked(gql, worker.services.work, "admin", "UADMIN5")
    slack.calls.clear()
    own_setup = Setup(setup.world, {"id": own}, own_post)
    assert "You proposed this action" in await refused_click(client, slack, own_setup, "UADMIN5")
    assert (await state(gql, setup.world, own))["approvalCount"] == 0


async def test_a_click_after_an_amendment_is_refused_and_the_message_shows_the_new_revision(
    gql: GraphQLClient,
    client: AsyncClient,
    worker: Worker,
    slack: FakeSlack,
    frozen_clock: clock.FrozenClock,
) -> None:
    setup = await posted(gql, worker, slack)
    amended = (
        await gql(AMEND, amendment(setup.proposal, patch={"amount": 80}), setup.world.reviewers[1])
    )["amendProposal"]["proposal"]
    words = await refused_click(client, slack, setup, "UREVIEW0")
    assert "amended" in words and "new revision" in words
    assert (await state(gql, setup.world, setup.proposal["id"]))["approvalCount"] == 0
    assert await send_notifications(worker.ctx) == 1
    [update] = slack.of("chat.update")
    value = json.loads(buttons(update)["signoff_approve"]["value"])
    assert value["d"] == amended["payloadDigest"] != setup.proposal["payloadDigest"]
    assert "*Revision*\\n2" in shown_text(update) and '\\"amount\\": 80' in shown_text(update)
    # The new revision's button decides.
    slack.calls.clear()
    update_post = Call("chat.postMessage", {**update.arguments}, BOT_TOKEN)
    answer = await interact(
        client, click("UREVIEW0", buttons(update)["signoff_approve"], update_post)
    )
    assert answer.status_code == 200 and slack.of("chat.postEphemeral") == []
    assert (await state(gql, setup.world, setup.proposal["id"]))["state"] == "QUEUED"


async def test_two_clicks_at_once_decide_once(
    gql: GraphQLClient,
    client: AsyncClient,
    worker: Worker,
    slack: FakeSlack,
) -> None:
    setup = await posted(gql, worker, slack)
    approve = buttons(setup.post)["signoff_approve"]
    answers = await asyncio.gather(
        *(
            interact(client, click(user, approve, setup.post))
            for user in ("UREVIEW0", "UREVIEW1", "UREVIEW0", "UREVIEW1")
        )
    )
    assert [a.status_code for a in answers] == [200] * 4
    assert (await state(gql, setup.world, setup.proposal["id"]))["state"] == "QUEUED"
    async with gql.sessionmaker() as session:
        approvals = (await session.exec(select(Approval))).all()
        stored = await session.get(Proposal, setup.proposal["id"])
    assert len(approvals) == 1 and stored is not None and stored.approval_count == 1
    assert len(slack.of("chat.postEphemeral")) == 3  # each loser is told why


async def test_decisions_by_any_path_and_expiry_update_the_message(
    gql: GraphQLClient, worker: Worker, slack: FakeSlack, frozen_clock: clock.FrozenClock
) -> None:
    setup = await posted(gql, worker, slack)
    await setup.world.decide(setup.world.reviewers[1], setup.proposal)  # the API
    assert await send_notifications(worker.ctx) == 1
    assert "*Approved* by reviewer-1" in shown_text(slack.of("chat.update")[-1])

    expiring = (await setup.world.propose(expiresInSeconds=60))["proposal"]
    assert await send_notifications(worker.ctx) == 1
    expiring_post = slack.of("chat.postMessage")[-1]
    assert expiring["id"] in buttons(expiring_post)["signoff_approve"]["value"]
    frozen_clock.advance(61)
    await expire_due_proposals(worker.ctx)
    assert await send_notifications(worker.ctx) == 1
    last = slack.of("chat.update")[-1]
    [stored] = [
        n
        for n in await notifications(worker)
        if n.event == "task.created" and n.id != _first(await notifications(worker))
    ]
    assert last.arguments["ts"] == stored.slack_ts
    assert "*Expired*" in shown_text(last) and set(buttons(last)) == {"signoff_open"}


def _first(sent: list[Notification]) -> str:
    return next(n.id for n in sent if n.event == "task.created")


async def test_slack_rate_limits_are_retried_after_the_time_slack_asks(
    gql: GraphQLClient, worker: Worker, slack: FakeSlack, frozen_clock: clock.FrozenClock
) -> None:
    slack.throttle["chat.postMessage"] = 1
    world = await build_world(gql)
    await gql(
        ADD_CHANNEL,
        {"input": {"queueId": world.queue_id, "kind": "SLACK_APP", "slackChannel": "C0REVIEWS"}},
        world.admin,
    )
    await world.propose()
    sent_at = clock.now()
    assert await send_notifications(worker.ctx) == 1
    [waiting] = await notifications(worker)
    assert (waiting.state, waiting.last_error_code) == ("PENDING", "HTTP_429")
    assert waiting.next_attempt_at is not None
    assert waiting.next_attempt_at - sent_at == timedelta(seconds=slack.retry_after)
    frozen_clock.advance(slack.retry_after)
    assert await send_notifications(worker.ctx) == 1
    [sent] = await notifications(worker)
    assert sent.state == "SENT" and sent.slack_ts is not None


async def test_the_channel_in_docs_slack_md_is_added_as_printed(
    gql: GraphQLClient, worker: Worker, slack: FakeSlack
) -> None:
    [printed] = re.findall(r"^```text\n(mutation.*?)^```$", page("docs/slack.md"), re.M | re.S)
    world = await build_world(gql)
    added = await gql(printed.replace('"…"', json.dumps(world.queue_id)), token=world.admin)
    assert added["addNotificationChannel"]["channel"]["url"] == "slack://channel?id=C0123456789"
    await world.propose()
    assert await send_notifications(worker.ctx) == 1
    assert slack.of("chat.postMessage")[0].arguments["channel"] == "C0123456789"


async def test_a_slack_app_channel_needs_the_app_and_a_channel_id(
    gql: GraphQLClient, settings: Settings
) -> None:
    world = await build_world(gql)
    given = {"queueId": world.queue_id, "kind": "SLACK_APP"}
    for extra, field in (
        ({}, "slackChannel"),
        ({"slackChannel": "#reviews"}, "slackChannel"),
        ({"slackChannel": "C0REVIEWS", "url": "https://example.com"}, "url"),
    ):
        error = await gql.error(ADD_CHANNEL, {"input": {**given, **extra}}, world.admin)
        assert (error.code, error.extensions.get("field")) == ("VALIDATION_FAILED", field)
    added = await gql(ADD_CHANNEL, {"input": {**given, "slackChannel": "C0REVIEWS"}}, world.admin)
    channel = added["addNotificationChannel"]
    assert channel["signingSecret"] is None
    assert channel["channel"]["url"] == "slack://channel?id=C0REVIEWS"
    async with gql.sessionmaker() as session:
        from signoff.models import NotificationChannel

        stored = await session.get(NotificationChannel, channel["channel"]["id"])
    assert stored is not None and stored.signing_secret is not None
    assert BOT_TOKEN not in stored.signing_secret  # sealed at rest


async def test_a_slack_user_decides_as_one_actor_at_most(
    gql: GraphQLClient, worker: Worker
) -> None:
    await gql.token(Role.REVIEWER, name="first")
    await gql.token(Role.REVIEWER, name="second")
    await linked(gql, worker.services.work, "first", "UREVIEW1")
    from signoff.errors import ValidationFailed

    with pytest.raises(ValidationFailed):
        await linked(gql, worker.services.work, "second", "UREVIEW1")
    with pytest.raises(ValidationFailed):
        await linked(gql, worker.services.work, "second", "not-an-id")
    async with gql.sessionmaker() as session:
        actors = {a.name: a.slack_user_id for a in (await session.exec(select(Actor))).all()}
    assert actors["first"] == "UREVIEW1" and actors["second"] is None


async def test_delivery_updates_the_message(
    gql: GraphQLClient, client: AsyncClient, worker: Worker, slack: FakeSlack
) -> None:
    async with serve(Receiver()) as receiver:
        setup = await posted(gql, worker, slack, url=receiver.url)
        receiver.secret = setup.world.signing_secret
        approve = buttons(setup.post)["signoff_approve"]
        assert (await interact(client, click("UREVIEW0", approve, setup.post))).status_code == 200
        assert await worker.deliver(setup.proposal["id"]) == "APPLIED"
    assert await send_notifications(worker.ctx) == 2  # the approval's update and delivery's
    assert "*Approved* by reviewer-0 and *delivered*" in shown_text(slack.of("chat.update")[-1])
