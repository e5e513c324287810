"""Queue notifications to real loopback receivers: signed webhooks and Slack messages on a
task entering the queue, due soon and escalated; retries, and failures that become
incidents (docs/design.md section 5.6)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlmodel import col, select

from signoff import clock
from signoff.jobs.delivery import expire_due_proposals, send_reminders
from signoff.jobs.notifications import send_notifications
from signoff.models import AuditEvent, Incident, Notification, Role
from tests.helpers import CREATE_QUEUE, CREATE_TASK, PROPOSE, GraphQLClient, build_world
from tests.jobs.conftest import Worker
from tests.receivers import Answer, Receiver, serve

ADD_CHANNEL = """
mutation($input: AddNotificationChannelInput!) {
  addNotificationChannel(input: $input) {
    signingSecret channel { id kind url includePayload reviewerId approvalLinkTtlSeconds }
  }
}
"""


async def add_channel(
    gql: GraphQLClient, admin: str, queue_id: str, url: str, kind: str = "WEBHOOK", **extra: Any
) -> dict[str, Any]:
    data = await gql(
        ADD_CHANNEL, {"input": {"queueId": queue_id, "kind": kind, "url": url, **extra}}, admin
    )
    result: dict[str, Any] = data["addNotificationChannel"]
    return result


async def notifications(worker: Worker) -> list[Notification]:
    async with worker.services.sessionmaker() as session:
        rows = await session.exec(select(Notification).order_by(col(Notification.created_at)))
        return list(rows.all())


async def test_a_webhook_channel_gets_a_signed_notice_without_the_payload(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql)
        added = await add_channel(gql, world.admin, world.queue_id, receiver.url)
        assert added["channel"]["includePayload"] is False
        receiver.secret = added["signingSecret"]
        payload = {"amount": 1200, "currency": "EUR"}
        proposed = await world.propose(payload)
        assert await send_notifications(worker.ctx) == 1
        assert await send_notifications(worker.ctx) == 0
    [got] = receiver.requests
    assert receiver.refused == 0  # the signature verified with the channel's secret
    [sent] = await notifications(worker)
    assert got.webhook_id == f"ntf_{sent.id}"
    assert got.body["type"] == "task.created"
    assert got.body["task"]["id"] == proposed["task"]["id"]
    assert got.body["proposal_id"] == proposed["proposal"]["id"]
    assert got.body["payload_digest"] == proposed["proposal"]["payloadDigest"]
    # Compared as keys and values, not as text: a digest or an id may spell "1200".
    keys, values = _keys_and_values(got.body)
    assert not keys & {"payload", *payload}
    assert not [value for value in values if value in payload.values()]
    assert (sent.state, sent.attempt_count) == ("SENT", 1)


def _keys_and_values(document: Any) -> tuple[set[str], list[Any]]:
    """Every key and every scalar value anywhere in a JSON document."""
    if isinstance(document, dict):
        keys, children = set(document), list(document.values())
    elif isinstance(document, list):
        keys, children = set(), document
    else:
        return set(), [document]
    values: list[Any] = []
    for child in children:
        child_keys, child_values = _keys_and_values(child)
        keys |= child_keys
        values += child_values
    return keys, values


async def test_a_slack_channel_gets_a_message_with_the_payload_when_allowed(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver(signed=False)) as slack:
        world = await build_world(gql)
        added = await add_channel(
            gql, world.admin, world.queue_id, slack.url, kind="SLACK", includePayload=True
        )
        assert added["signingSecret"] is None
        await world.propose({"amount": 4321, "currency": "EUR"})
        assert await send_notifications(worker.ctx) == 1
    [got] = slack.requests
    assert set(got.body) == {"text"}
    assert got.body["text"].startswith("[Payments] New task: Approve refund.create on refunds-")
    assert '{"amount": 4321, "currency": "EUR"}' in got.body["text"]


async def test_due_soon_and_escalation_are_notified_to_the_queue_they_concern(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver(signed=False)) as first, serve(Receiver(signed=False)) as second:
        admin = await gql.token(Role.ADMIN, name="owner")
        night = (await gql(CREATE_QUEUE, {"input": {"slug": "night", "name": "Night"}}, admin))[
            "createQueue"
        ]
        policy = {
            "action": "ESCALATE",
            "escalation": [{"queueId": night["id"], "deadlineSeconds": 600}],
        }
        world = await build_world(
            gql, deadlinePolicy=policy, queue_options={"reminderPercents": [50]}
        )
        await add_channel(gql, world.admin, world.queue_id, first.url, kind="SLACK")
        await add_channel(gql, world.admin, night["id"], second.url, kind="SLACK")
        await world.propose(expiresInSeconds=100)
        frozen_clock.advance(50)
        assert await send_reminders(worker.ctx) == 1
        frozen_clock.advance(50)
        assert await expire_due_proposals(worker.ctx) == 1
        assert await send_notifications(worker.ctx) == 3
    assert [r.body["text"].split(":")[0] for r in first.requests] == [
        "[Payments] New task",
        "[Payments] Due soon",
    ]
    assert [r.body["text"].split(":")[0] for r in second.requests] == [
        "[Night] Escalated to this queue"
    ]


async def test_failed_notifications_are_retried_then_become_an_incident(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver([Answer(503)], signed=False)) as failing:
        world = await build_world(gql)
        await add_channel(gql, world.admin, world.queue_id, failing.url, kind="SLACK")
        await world.propose()
        for attempt in range(1, 6):
            assert await send_notifications(worker.ctx) == 1
            assert await send_notifications(worker.ctx) == 0  # waiting for its backoff
            frozen_clock.advance(15 * 2 ** (attempt - 1))  # jitter pinned: the upper bound
        assert await send_notifications(worker.ctx) == 0  # gave up
    assert len(failing.requests) == 5
    assert [r.attempt for r in failing.requests] == [1, 2, 3, 4, 5]
    [failed] = await notifications(worker)
    assert (failed.state, failed.last_error_code) == ("FAILED", "HTTP_503")
    async with worker.services.sessionmaker() as session:
        [incident] = (await session.exec(select(Incident))).all()
        actions = (
            await session.exec(select(AuditEvent.action).where(AuditEvent.target_id == failed.id))
        ).all()
    assert (incident.kind, incident.entity_type, incident.entity_id) == (
        "notification_failed",
        "notification",
        failed.id,
    )
    assert incident.last_error_code == "HTTP_503"
    assert sorted(actions) == ["notification.failed"] + ["notification.retry_scheduled"] * 4


async def test_an_unreachable_channel_fails_without_blocking_the_others(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver(signed=False)) as working:
        world = await build_world(gql)
        await add_channel(
            gql, world.admin, world.queue_id, "http://127.0.0.1:9/nobody", kind="SLACK"
        )
        await add_channel(gql, world.admin, world.queue_id, working.url, kind="SLACK")
        await world.propose()
        assert await send_notifications(worker.ctx) == 2
    assert len(working.requests) == 1
    states = sorted((n.state, n.last_error_code) for n in await notifications(worker))
    assert states == [("PENDING", "CONNECTION_FAILED"), ("SENT", None)]


async def test_concurrent_senders_send_each_notification_once(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver(signed=False)) as receiver:
        world = await build_world(gql)
        await add_channel(gql, world.admin, world.queue_id, receiver.url, kind="SLACK")
        for _ in range(5):
            await world.propose()
        sent = await asyncio.gather(*(send_notifications(worker.ctx) for _ in range(4)))
    assert sum(sent) == 5
    assert len(receiver.requests) == 5
    assert {n.state for n in await notifications(worker)} == {"SENT"}


async def test_adding_a_channel_is_checked(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    refusals = [
        (world.admin, world.queue_id, "ftp://example.com/x", "VALIDATION_FAILED"),
        (world.admin, "no-such-queue", "https://example.com/x", "NOT_FOUND"),
        (world.reviewers[0], world.queue_id, "https://example.com/x", "FORBIDDEN"),
    ]
    for token, queue_id, url, code in refusals:
        refused = await gql.error(
            ADD_CHANNEL, {"input": {"queueId": queue_id, "kind": "WEBHOOK", "url": url}}, token
        )
        assert refused.code == code, url


async def test_agent_text_in_a_slack_message_is_shown_not_obeyed(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver(signed=False)) as slack:
        world = await build_world(gql)
        await add_channel(
            gql, world.admin, world.queue_id, slack.url, kind="SLACK", includePayload=True
        )
        title = "<!channel> & <https://evil.example|Approve>"
        given = {"queueId": world.queue_id, "kind": "REVIEW", "title": title}
        await gql(CREATE_TASK, {"i": given}, world.admin)
        await world.propose({"amount": 1, "currency": "EUR", "note": "```\n<!here> *pay now*"})
        assert await send_notifications(worker.ctx) == 2
    texts = [got.body["text"] for got in slack.requests]
    assert not [text for text in texts if "<!" in text or "<http" in text]
    [task_text] = [text for text in texts if "evil" in text]
    assert "&lt;!channel&gt; &amp; &lt;https://evil.example|Approve&gt;" in task_text
    [payload_text] = [text for text in texts if "pay now" in text]
    # One code block: its fences are the only backticks, so the note stays inside.
    assert payload_text.count("`") == 6
    assert payload_text.endswith("```")
    assert '"note": "\\u0060\\u0060\\u0060\\n&lt;!here&gt; *pay now*"' in payload_text


async def test_an_action_code_is_a_plain_identifier(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    for code in ("<!channel>", "<https://evil.example|Approve>", "refund create", "1refund"):
        refused = await gql.error(
            PROPOSE,
            {
                "input": {
                    "targetId": world.target_id,
                    "actionCode": code,
                    "payload": {"amount": 1, "currency": "EUR"},
                    "operationKey": code,
                }
            },
            world.agent,
        )
        refusal = (refused.code, refused.extensions.get("field"))
        assert refusal == ("VALIDATION_FAILED", "actionCode"), code
    await world.propose(actionCode="payouts:send_batch-2")
