"""A notification goes out at once, as a job of its own enqueued after commit, not at the next
sweep: with the in-process runner (embedded default) and with an arq worker on Redis. The
sweeps here run once a minute, so only the job can send within the bound; the link the
notification carries then decides (docs/design.md section 5.6)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time

import pytest

from signoff.config import Settings
from tests.conftest import requires_redis
from tests.helpers import GraphQLClient, build_world
from tests.jobs.test_notification_links import PUBLIC_URL, link_channel, link_path
from tests.jobs.test_runners import arq_settings, arq_worker
from tests.processes import LOOPBACK_NETWORKS
from tests.receivers import Receiver, serve
from tests.redis_keys import unique_queue
from tests.schema.test_approval_links import form, post, proposal_state

SENT_WITHIN = 3.0  # seconds; the sweep interval here is 60


async def sent_promptly(gql: GraphQLClient, receiver: Receiver) -> float:
    """Propose, then poll (bounded) until the receiver has the notification; returns how
    long it took, and checks that its link decides."""
    world = await build_world(gql)
    receiver.secret = (await link_channel(gql, world, receiver.url))["signingSecret"]
    proposed = await world.propose()
    started = time.monotonic()
    while not receiver.requests:
        assert time.monotonic() - started < SENT_WITHIN, "no notification yet"
        await asyncio.sleep(0.02)
    took = time.monotonic() - started
    [got] = receiver.requests
    assert got.body["type"] == "task.created"
    decided = await post(gql, link_path(got), form(proposed["proposal"]["payloadDigest"]))
    assert decided.status_code == 200 and "Decision recorded" in decided.text, decided.text
    # Approved, then handed to delivery (whose target here answers nothing).
    assert await proposal_state(gql, proposed["proposal"]["id"]) != "APPROVAL_REQUIRED"
    return took


class TestEmbedded:
    @pytest.fixture
    def settings(self, database_url: str) -> Settings:
        return Settings(
            database_url=database_url,
            secret_key=os.environ["SIGNOFF_SECRET_KEY"],
            audit_signing_key=os.environ["SIGNOFF_AUDIT_SIGNING_KEY"],
            delivery_allow_networks=LOOPBACK_NETWORKS,
            sweep_interval_seconds=60,
            public_url=PUBLIC_URL,
        )

    async def test_a_notification_is_sent_at_once_by_the_in_process_runner(
        self, gql: GraphQLClient
    ) -> None:
        async with serve(Receiver()) as receiver:
            assert await sent_promptly(gql, receiver) < SENT_WITHIN


@requires_redis
class TestArq:
    @pytest.fixture
    def settings(self, database_url: str) -> Settings:
        return dataclasses.replace(
            arq_settings(database_url, unique_queue()),
            sweep_interval_seconds=60,
            public_url=PUBLIC_URL,
        )

    async def test_a_notification_is_sent_at_once_by_an_arq_worker(
        self, gql: GraphQLClient, settings: Settings
    ) -> None:
        async with serve(Receiver()) as receiver, arq_worker(settings):
            assert await sent_promptly(gql, receiver) < SENT_WITHIN
