"""Mail to one reviewer (docs/design.md section 5.6, docs/slack.md): a real SMTP server on
loopback (aiosmtpd) receives each task's mail, plain text and HTML with the summary and a
single-use approval link; the link from the received mail decides, and a task's mails
are one thread."""

from __future__ import annotations

import dataclasses
import email
import re
import socket
from collections.abc import Iterator
from email.message import EmailMessage
from email.policy import default
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session
from httpx import AsyncClient
from sqlmodel import select

from signoff.config import Settings, SmtpSettings
from signoff.jobs.notifications import send_notifications
from signoff.models import Actor, HumanTask
from signoff.resolvers.reach.notifications import notify
from tests.helpers import GraphQLClient, build_world
from tests.jobs.conftest import Worker

ADD_CHANNEL = """mutation($input: AddNotificationChannelInput!) {
  addNotificationChannel(input: $input) { channel { id kind url reviewerId } } }"""
LINK = re.compile(r"http://127\.0\.0\.1:8000(/links/[\w-]+)")


@dataclasses.dataclass
class Mailbox:
    """What the SMTP server received: each message and its envelope's recipients."""

    received: list[tuple[list[str], EmailMessage]] = dataclasses.field(default_factory=list)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.content
        assert isinstance(content, bytes)
        message = email.message_from_bytes(content, policy=default)
        assert isinstance(message, EmailMessage)
        self.received.append((list(envelope.rcpt_tos), message))
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def mailbox() -> Iterator[tuple[Mailbox, int]]:
    box, port = Mailbox(), _free_port()
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    yield box, port
    controller.stop()


@pytest.fixture
def settings(settings: Settings, mailbox: tuple[Mailbox, int]) -> Settings:
    smtp = SmtpSettings(
        host="127.0.0.1", port=mailbox[1], starttls=False, sender="signoff@example.com"
    )
    return dataclasses.replace(settings, smtp=smtp)


async def reviewer_id(gql: GraphQLClient, name: str) -> str:
    async with gql.sessionmaker() as session:
        actor = (await session.exec(select(Actor).where(Actor.name == name))).one()
    return actor.id


def part(message: EmailMessage, subtype: str) -> str:
    body = message.get_body(preferencelist=(subtype,))
    assert body is not None
    content: str = body.get_content()
    return content


async def test_a_reviewer_decides_through_the_link_in_the_mail_they_received(
    gql: GraphQLClient, client: AsyncClient, worker: Worker, mailbox: tuple[Mailbox, int]
) -> None:
    box, _ = mailbox
    world = await build_world(gql, summaryField="amount")
    await gql(
        ADD_CHANNEL,
        {
            "input": {
                "queueId": world.queue_id,
                "kind": "EMAIL",
                "reviewerId": await reviewer_id(gql, "reviewer-0"),
                "emailAddress": "reviewer0@example.com",
            }
        },
        world.admin,
    )
    proposed = await world.propose({"amount": 1200, "currency": "EUR"})
    assert await send_notifications(worker.ctx) == 1
    [(recipients, message)] = box.received
    assert recipients == ["reviewer0@example.com"]
    assert message["To"] == "reviewer0@example.com"
    assert message["Message-ID"] == f"<task-{proposed['task']['id']}@example.com>"
    assert message["List-Unsubscribe"].startswith("<mailto:signoff@example.com?")
    text, page_html = part(message, "plain"), part(message, "html")
    for shown in ("refund.create", "amount: 1200", proposed["proposal"]["payloadDigest"]):
        assert shown in text
    assert "EUR" not in text  # the payload itself only with includePayload
    [path] = set(LINK.findall(text))
    assert path in page_html

    opened = await client.get(path)
    assert opened.status_code == 200 and proposed["proposal"]["payloadDigest"] in opened.text
    decided = await client.post(
        path,
        data={"payload_digest": proposed["proposal"]["payloadDigest"], "decision": "APPROVED"},
    )
    assert decided.status_code == 200 and "Decision recorded" in decided.text
    state = await gql(
        "query($id: ID!) { proposal(id: $id) { state } }",
        {"id": proposed["proposal"]["id"]},
        world.admin,
    )
    assert state["proposal"]["state"] == "QUEUED"
    assert (await client.post(path, data={"decision": "APPROVED"})).status_code == 410


async def test_a_tasks_mails_are_one_thread(
    gql: GraphQLClient, worker: Worker, mailbox: tuple[Mailbox, int]
) -> None:
    box, _ = mailbox
    world = await build_world(gql)
    added = {
        "queueId": world.queue_id,
        "kind": "EMAIL",
        "reviewerId": await reviewer_id(gql, "reviewer-1"),
        "emailAddress": "reviewer1@example.com",
        "includePayload": True,
    }
    await gql(ADD_CHANNEL, {"input": added}, world.admin)
    proposed = await world.propose({"amount": 7, "currency": "EUR"})
    async with worker.services.work() as work:
        task = await work.session.get(HumanTask, proposed["task"]["id"])
        assert task is not None
        await notify(work, task, "task.due_soon")
        await work.commit()
    assert await send_notifications(worker.ctx) == 2
    by_subject: dict[str, Any] = {m["Subject"].split(":")[0]: m for _, m in box.received}
    first, reminder = by_subject["Approval needed"], by_subject["Due soon"]
    assert reminder["In-Reply-To"] == reminder["References"] == first["Message-ID"]
    assert reminder["Message-ID"] != first["Message-ID"]
    assert '"currency": "EUR"' in part(first, "plain")
    # Each mail carries a link; the reminder's replaced the first one's.
    assert len({LINK.search(part(m, "plain")).group(1) for m in (first, reminder)}) == 2  # type: ignore[union-attr]


async def test_an_email_channel_goes_to_one_reviewer(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    given = {"queueId": world.queue_id, "kind": "EMAIL", "emailAddress": "a@example.com"}
    error = await gql.error(ADD_CHANNEL, {"input": given}, world.admin)
    assert (error.code, error.extensions["field"]) == ("VALIDATION_FAILED", "reviewerId")
    reviewer = await reviewer_id(gql, "reviewer-0")
    bad = {**given, "reviewerId": reviewer, "emailAddress": "not an address"}
    error = await gql.error(ADD_CHANNEL, {"input": bad}, world.admin)
    assert (error.code, error.extensions["field"]) == ("VALIDATION_FAILED", "emailAddress")
