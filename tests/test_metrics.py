"""The process side of metrics: live subscribers of an API process, and the metrics
server of ``signoff worker`` (SIGNOFF_METRICS_PORT)."""

from __future__ import annotations

import asyncio
import os
import socket

import httpx
import pytest
from starlette.applications import Starlette

from signoff.config import Settings
from signoff.jobs.worker import shutdown, startup
from signoff.models import Role
from tests.helpers import CREATE_QUEUE, GraphQLClient
from tests.live import InProcessServer, Subscription, serve_in_process
from tests.metrics_reading import parse, value

QUEUE_EVENTS = "subscription { queueEvents { cursor kind } }"


async def test_live_subscribers_are_counted(app: Starlette, gql: GraphQLClient) -> None:
    operator = await gql.token(Role.OPERATOR)
    server: InProcessServer
    async with (
        serve_in_process(app) as server,
        httpx.AsyncClient(base_url=server.url) as client,
    ):
        async with (
            Subscription(server.ws_url, operator, QUEUE_EVENTS, {}),
            Subscription(server.ws_url, operator, QUEUE_EVENTS, {}),
        ):
            for _ in range(100):
                samples = parse((await client.get("/metrics")).text)
                if value(samples, "signoff_live_subscribers") == 2:
                    break
                await asyncio.sleep(0.05)
            assert value(samples, "signoff_live_subscribers") == 2
            # The two see the same frames: one group, one execution per event.
            assert value(samples, "signoff_live_groups") == 1
            before = value(samples, "signoff_live_frame_executions_total")
            await gql(CREATE_QUEUE, {"input": {"slug": "metered", "name": "Metered"}}, operator)
            for _ in range(100):
                samples = parse((await client.get("/metrics")).text)
                if value(samples, "signoff_live_frame_executions_total") > before:
                    break
                await asyncio.sleep(0.05)
            assert value(samples, "signoff_live_frame_executions_total") == before + 1
        for _ in range(100):
            samples = parse((await client.get("/metrics")).text)
            if value(samples, "signoff_live_subscribers") == 0:
                break
            await asyncio.sleep(0.05)
        assert value(samples, "signoff_live_subscribers") == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_the_metrics_port_is_read_from_the_environment() -> None:
    assert Settings.from_env({}).metrics_port is None
    settings = Settings.from_env({"SIGNOFF_METRICS_PORT": "9464", "SIGNOFF_METRICS_HOST": "::"})
    assert (settings.metrics_port, settings.metrics_host) == (9464, "::")


async def test_a_worker_serves_its_metrics_on_the_metrics_port(
    database_url: str, clean_database: None
) -> None:
    port = _free_port()
    settings = Settings(
        database_url=database_url, secret_key=os.environ["SIGNOFF_SECRET_KEY"], metrics_port=port
    )
    ctx = {"settings": settings, "redis": None}
    await startup(ctx)
    try:
        async with httpx.AsyncClient() as client:
            response = await client.get(f"http://127.0.0.1:{port}/metrics")
        assert response.status_code == 200
        assert "# TYPE signoff_deliveries_total counter" in response.text
        assert "# TYPE signoff_reconciliation_repairs_total counter" in response.text
        # A worker reports its own counters, not the database gauges (API processes do).
        assert "signoff_proposals" not in response.text
    finally:
        await shutdown(ctx)
    with pytest.raises(httpx.ConnectError):  # the server stopped with the worker
        async with httpx.AsyncClient() as client:
            await client.get(f"http://127.0.0.1:{port}/metrics")
