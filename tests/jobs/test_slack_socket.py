"""Slack without a public URL (docs/slack.md, "Behind a firewall"): Socket Mode over a real
websocket to the fake Slack on loopback. Each interactive envelope is decided by the very
rule the HTTP endpoint uses, then acknowledged; a socket Slack closes is replaced."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.applications import Starlette

from signoff.config import Settings
from signoff.jobs.slack_socket import SlackSocket
from signoff.jobs.worker import shutdown, startup
from signoff.resolvers.reach.slack_interactions import SlackInteractions
from signoff.web.app import create_app
from tests.fake_slack import FakeSlack, serve_slack
from tests.helpers import GraphQLClient
from tests.jobs.conftest import Worker
from tests.jobs.test_slack_app import BOT_TOKEN, SECRET, buttons, click, posted, state

APP_TOKEN = "xapp-1-A1-1-test"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with serve_slack() as fake:
        yield fake


@pytest.fixture
def settings(settings: Settings, slack: FakeSlack) -> Settings:
    """The Slack app's settings with its app-level token. Socket Mode stays off here (the
    app under test would hold a connection of its own); each test opens the one it needs."""
    return dataclasses.replace(
        settings,
        slack_bot_token=BOT_TOKEN,
        slack_signing_secret=SECRET,
        slack_api_url=slack.url,
        slack_app_token=APP_TOKEN,
    )


@pytest.fixture
async def socket(worker: Worker, settings: Settings, slack: FakeSlack) -> AsyncIterator[None]:
    """This test's connection, deciding with the worker's services, open once Slack said
    hello."""
    actions = SlackInteractions(worker.services.work, settings)
    connection = SlackSocket(actions, APP_TOKEN, settings.slack_api_url)
    await connection.start()
    await slack.connections(1)
    yield
    await connection.stop()


def submission(user: str, value: str, reason: str) -> dict[str, Any]:
    """The Reject modal's ``view_submission``, as Slack sends it."""
    return {
        "type": "view_submission",
        "user": {"id": user},
        "view": {
            "callback_id": "signoff_reject_modal",
            "private_metadata": value,
            "state": {"values": {"reason": {"reason_input": {"value": reason}}}},
        },
    }


async def test_a_click_over_socket_mode_decides_and_a_refusal_is_answered_in_words(
    gql: GraphQLClient, worker: Worker, slack: FakeSlack, socket: None
) -> None:
    setup = await posted(gql, worker, slack)
    [opened] = slack.of("apps.connections.open")
    assert opened.token == APP_TOKEN  # the app-level token, not the bot's
    approve = buttons(setup.post)["signoff_approve"]

    ack = await slack.push(click("UREVIEW0", approve, setup.post))
    assert "payload" not in ack  # an empty acknowledgement
    assert (await state(gql, setup.world, setup.proposal["id"]))["state"] == "QUEUED"
    assert slack.of("chat.postEphemeral") == []

    ack = await slack.push(click("UREVIEW1", approve, setup.post))
    assert "payload" not in ack
    [ephemeral] = slack.of("chat.postEphemeral")
    assert ephemeral.arguments["user"] == "UREVIEW1"
    assert "no longer waits for approval" in ephemeral.arguments["text"]
    assert (await state(gql, setup.world, setup.proposal["id"]))["approvalCount"] == 1


async def test_the_reject_modal_over_socket_mode_answers_in_its_acknowledgement(
    gql: GraphQLClient, worker: Worker, slack: FakeSlack, socket: None
) -> None:
    setup = await posted(gql, worker, slack)
    reject = buttons(setup.post)["signoff_reject"]
    await slack.push(click("UREVIEW1", reject, setup.post))
    [opened] = slack.of("views.open")
    value = opened.arguments["view"]["private_metadata"]

    refused = await slack.push(submission("U9STRANGER", value, "Not mine to say"))
    assert refused["payload"]["response_action"] == "errors"
    assert "signoff actor link-slack" in refused["payload"]["errors"]["reason"]
    assert (await state(gql, setup.world, setup.proposal["id"]))["state"] == "APPROVAL_REQUIRED"

    accepted = await slack.push(submission("UREVIEW1", value, "Wrong customer"))
    assert "payload" not in accepted  # the modal closes
    assert (await state(gql, setup.world, setup.proposal["id"]))["state"] == "REJECTED"


async def test_a_socket_slack_closes_is_replaced_and_the_next_click_decides(
    gql: GraphQLClient, worker: Worker, slack: FakeSlack, socket: None
) -> None:
    setup = await posted(gql, worker, slack)
    slack.close_sockets()
    await slack.connections(2)
    assert len(slack.of("apps.connections.open")) == 2  # a fresh URL for each connection
    assert len(set(slack.tickets)) == 2

    ignored = await slack.push({"event": {"type": "app_mention"}}, kind="events_api")
    assert "payload" not in ignored
    await slack.push(click("UREVIEW0", buttons(setup.post)["signoff_approve"], setup.post))
    assert (await state(gql, setup.world, setup.proposal["id"]))["state"] == "QUEUED"


async def test_signoff_serve_without_redis_holds_the_socket(
    settings: Settings, slack: FakeSlack, clean_database: None
) -> None:
    on = dataclasses.replace(settings, slack_socket_mode=True, redis_url=None)
    application: Starlette = create_app(on)
    async with application.router.lifespan_context(application):
        await slack.connections(1)
        [opened] = slack.of("apps.connections.open")
        assert opened.token == APP_TOKEN
    await slack.all_closed()  # closed with the process


async def test_signoff_worker_holds_the_socket(
    settings: Settings, slack: FakeSlack, clean_database: None
) -> None:
    """With Redis the worker runs the jobs and holds the socket: its start-up, as arq runs
    it (no job is enqueued here, so the test needs no Redis)."""
    on = dataclasses.replace(settings, slack_socket_mode=True)
    ctx: dict[str, Any] = {"settings": on, "redis": None}
    await startup(ctx)
    try:
        await slack.connections(1)
        assert slack.of("apps.connections.open")[0].token == APP_TOKEN
    finally:
        await shutdown(ctx)
    await slack.all_closed()


def test_socket_mode_needs_an_app_token_and_the_bot_token() -> None:
    base = {"SIGNOFF_SLACK_SOCKET_MODE": "1", "SIGNOFF_SLACK_BOT_TOKEN": "xoxb-1"}
    for env, words in (
        (base, "needs SIGNOFF_SLACK_APP_TOKEN"),
        ({**base, "SIGNOFF_SLACK_APP_TOKEN": "xoxb-wrong"}, "not an app-level token"),
        ({"SIGNOFF_SLACK_SOCKET_MODE": "1", "SIGNOFF_SLACK_APP_TOKEN": APP_TOKEN}, "BOT_TOKEN"),
    ):
        with pytest.raises(ValueError, match=words) as refused:
            Settings.from_env(env)
        assert "xoxb-wrong" not in str(refused.value)
    on = Settings.from_env({**base, "SIGNOFF_SLACK_APP_TOKEN": APP_TOKEN})
    assert (on.slack_socket_mode, on.slack_app_token) == (True, APP_TOKEN)
