"""Where deliveries and notifications may go: refused at registration when the URL alone
shows it, and on the address each connection is opened to, so a name that resolves
somewhere refused later (DNS rebinding) reaches nothing (docs/design.md section 10)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import uuid
from collections.abc import AsyncIterator

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from sqlmodel import col, update

from signoff import clock
from signoff.config import Settings
from signoff.destinations import DestinationPolicy
from signoff.jobs.context import CTX_KEY, open_http_client
from signoff.jobs.notifications import send_notifications
from signoff.models import Notification, Target
from tests.helpers import PAYMENT_SCHEMA, REGISTER_TARGET, GraphQLClient, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import approved, read
from tests.jobs.test_notifications import ADD_CHANNEL, add_channel, notifications
from tests.processes import LOOPBACK_NETWORKS
from tests.receivers import Receiver, serve

# Each spelled as the issue found them accepted; all reach this host, its metadata
# service or a private network.
REFUSED_EVERYWHERE = [
    "http://169.254.169.254/latest/meta-data/",
    "http://0.0.0.0:8000/hook",
    "http://[fe80::1]/hook",
    "http://[::ffff:169.254.169.254]/",
    "http://user:pw@example.com/hook",
]
REFUSED_UNLESS_ALLOWED = [
    "http://[::1]/hook",
    "http://0x7f000001/hook",
    "http://127.1/hook",
    "http://2130706433/hook",
    "http://localhost/hook",
    "http://LOCALHOST./hook",
    "http://127.0.0.1:6379/",
    "http://[::ffff:127.0.0.1]/hook",
    "http://10.0.0.8/hook",
    "http://192.168.1.1/hook",
]


async def _refusal(gql: GraphQLClient, admin: str, queue_id: str, url: str) -> tuple[str, str]:
    """The codes registering a target and adding a channel with ``url`` are answered with."""
    target = {
        "name": f"t-{uuid.uuid4().hex[:6]}",
        "url": url,
        "inputSchema": PAYMENT_SCHEMA,
        "approvalMode": "HUMAN",
        "queueId": queue_id,
    }
    registered = await gql.raw(REGISTER_TARGET, {"input": target}, admin)
    channel = {"queueId": queue_id, "kind": "SLACK", "url": url}
    added = await gql.raw(ADD_CHANNEL, {"input": channel}, admin)
    return tuple(  # type: ignore[return-value]
        answer["errors"][0]["extensions"]["code"] if answer.get("errors") else "ACCEPTED"
        for answer in (registered, added)
    )


class TestWithoutAllowedNetworks:
    @pytest.fixture
    def settings(self, database_url: str) -> Settings:
        return Settings(
            database_url=database_url,
            embedded_worker=False,
            secret_key=os.environ["SIGNOFF_SECRET_KEY"],
            audit_signing_key=os.environ["SIGNOFF_AUDIT_SIGNING_KEY"],
        )

    async def test_only_public_addresses_are_registered(self, gql: GraphQLClient) -> None:
        world = await build_world(gql, url="https://hooks.example.com/refunds")
        for url in REFUSED_EVERYWHERE + REFUSED_UNLESS_ALLOWED:
            refused = await _refusal(gql, world.admin, world.queue_id, url)
            assert refused == ("DESTINATION_REFUSED", "DESTINATION_REFUSED"), url
        # A public address is accepted; a name is not resolved at registration (no network
        # wait in a transaction): it is checked on the address it is connected to.
        for url in ("https://8.8.8.8/x", "https://rebound.example/x"):
            assert await _refusal(gql, world.admin, world.queue_id, url) == ("ACCEPTED", "ACCEPTED")


async def test_allowed_networks_never_open_reserved_addresses(gql: GraphQLClient) -> None:
    world = await build_world(gql)  # the suite allows loopback
    for url in REFUSED_EVERYWHERE:
        refused = await _refusal(gql, world.admin, world.queue_id, url)
        assert refused == ("DESTINATION_REFUSED", "DESTINATION_REFUSED"), url
    for url in ("http://127.0.0.1:9/hook", "http://[::1]:9/hook", "http://localhost:9/hook"):
        assert await _refusal(gql, world.admin, world.queue_id, url) == ("ACCEPTED", "ACCEPTED")


class Resolver(AbstractResolver):
    """Names answered as the test says, as a DNS server an attacker runs would."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        address = self.answers[host]
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        return None


@contextlib.asynccontextmanager
async def reaching(
    worker: Worker, destinations: DestinationPolicy, resolver: AbstractResolver | None = None
) -> AsyncIterator[Worker]:
    """``worker`` with an HTTP client of its own: ``destinations`` and ``resolver``."""
    http = open_http_client(destinations, resolver=resolver)
    try:
        services = dataclasses.replace(worker.services, http=http)
        yield Worker(ctx={CTX_KEY: services}, jobs=worker.jobs)
    finally:
        await http.close()


async def test_a_name_is_checked_on_the_address_it_resolves_to_when_connecting(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver()) as receiver:
        rebound = receiver.url.replace("127.0.0.1", "rebound.example")
        world = await build_world(gql, url=rebound)
        receiver.secret = world.signing_secret
        resolver = Resolver({"rebound.example": "127.0.0.1"})
        refused, allowed = await approved(world), await approved(world)
        async with reaching(worker, DestinationPolicy(), resolver) as public_only:
            assert await public_only.deliver(refused["id"]) == "FAILED"
        async with reaching(worker, DestinationPolicy(LOOPBACK_NETWORKS), resolver) as local:
            assert await local.deliver(allowed["id"]) == "APPLIED"
    # Only the allowed attempt arrived: the refused one was stopped before connecting.
    [request] = receiver.requests
    assert request.webhook_id == f"msg_{allowed['id']}"
    failed = await read(world, refused["id"])
    assert (failed["lastErrorCode"], failed["deliveryTerminal"]) == ("DESTINATION_REFUSED", True)
    [attempt] = failed["attempts"]
    assert (attempt["responseClass"], attempt["errorCode"]) == ("TERMINAL", "DESTINATION_REFUSED")


async def test_urls_stored_before_the_policy_fail_with_a_code(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        await add_channel(gql, world.admin, world.queue_id, receiver.url, kind="SLACK")
        loopback, with_password = await approved(world), await approved(world)
        async with reaching(worker, DestinationPolicy()) as public_only:
            assert await public_only.deliver(loopback["id"]) == "FAILED"
            assert await send_notifications(public_only.ctx) == 2
        await _set_url(world.gql, world.target_id, receiver.url.replace("//", "//u:pw@", 1))
        assert await worker.deliver(with_password["id"]) == "FAILED"
    assert receiver.requests == []
    for proposal in (loopback, with_password):
        assert (await read(world, proposal["id"]))["lastErrorCode"] == "DESTINATION_REFUSED"
    sent: list[Notification] = await notifications(worker)
    assert {(n.state, n.last_error_code) for n in sent} == {("PENDING", "DESTINATION_REFUSED")}


async def _set_url(gql: GraphQLClient, target_id: str, url: str) -> None:
    """A URL as an earlier version stored it, before registration refused it."""
    async with gql.sessionmaker() as session:
        await session.exec(update(Target).where(col(Target.id) == target_id).values(url=url))
        await session.commit()
