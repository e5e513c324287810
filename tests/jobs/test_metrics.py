"""``/metrics`` after a scripted run equals what happened: deliveries by outcome and their
latency, GraphQL requests and errors by code, and the database gauges."""

from __future__ import annotations

from typing import Any

from httpx import AsyncClient
from sqlmodel import select

from signoff.models import DeliveryAttempt
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.metrics_reading import Samples, parse, value
from tests.receivers import Answer, Receiver, serve


async def scrape(client: AsyncClient) -> Samples:
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return parse(response.text)


async def approved(world: World) -> dict[str, Any]:
    proposal = (await world.propose())["proposal"]
    assert (await world.decide(world.reviewers[0], proposal))["proposal"]["state"] == "QUEUED"
    return proposal


async def test_metrics_after_a_scripted_run(
    gql: GraphQLClient, client: AsyncClient, worker: Worker
) -> None:
    before = await scrape(client)
    script = [Answer(200), Answer(200), Answer(200), Answer(503), Answer(409)]
    async with serve(Receiver(script=script)) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposals = [await approved(world) for _ in script]
        outcomes = [await worker.deliver(p["id"]) for p in proposals]
    assert outcomes == ["APPLIED", "APPLIED", "APPLIED", "FAILED", "FAILED"]

    reviewer = world.reviewers[0]
    for _ in range(2):
        assert (await gql.error("{ operationsSnapshot { generatedAt } }", token=reviewer)).code == (
            "FORBIDDEN"
        )
    assert (await gql.error("{ noSuchField }", token=world.admin)).code == (
        "GRAPHQL_VALIDATION_FAILED"
    )
    after = await scrape(client)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("signoff_deliveries_total", outcome="APPLIED") == 3
    assert delta("signoff_deliveries_total", outcome="RETRYABLE") == 1
    assert delta("signoff_deliveries_total", outcome="TERMINAL") == 1
    assert delta("signoff_deliveries_total", outcome="ACCEPTED") == 0
    async with gql.sessionmaker() as session:
        attempts = (await session.exec(select(DeliveryAttempt))).all()
    assert delta("signoff_delivery_duration_seconds_count") == 5
    seconds = sum((a.finished_at - a.started_at).total_seconds() for a in attempts)
    assert abs(delta("signoff_delivery_duration_seconds_sum") - seconds) < 1e-3

    assert delta("signoff_graphql_errors_total", code="FORBIDDEN") == 2
    assert delta("signoff_graphql_errors_total", code="GRAPHQL_VALIDATION_FAILED") == 1
    assert delta("signoff_graphql_errors_total", code="INTERNAL") == 0
    # build_world: 2 mutations; 5 proposals each proposed and decided; 2 refused queries, one
    # invalid document (parsed, so its type is known). Tokens are made without GraphQL.
    assert delta("signoff_graphql_requests_total", operation="mutation") == 2 + 2 * 5
    assert delta("signoff_graphql_requests_total", operation="query") == 3

    assert value(after, "signoff_operations_read_ok") == 1
    assert value(after, "signoff_proposals", state="APPLIED") == 3
    assert value(after, "signoff_proposals", state="FAILED") == 2
    assert value(after, "signoff_outbox_items", outbox="proposal_delivery", status="retrying") == 1
    assert (
        value(after, "signoff_outbox_items", outbox="proposal_delivery", status="terminal_failure")
        == 1
    )
    assert value(after, "signoff_open_incidents", severity="HIGH") == 1
    assert value(after, "signoff_open_incidents", severity="CRITICAL") == 0
    # The retry is scheduled in the future: nothing is due yet.
    assert value(after, "signoff_outbox_oldest_due_age_seconds", outbox="proposal_delivery") == 0
    assert value(after, "signoff_live_subscribers") == 0


async def test_scraping_needs_no_token(client: AsyncClient) -> None:
    """Like /healthz, /metrics takes no token: Prometheus scrapes it as it is."""
    samples = await scrape(client)
    assert value(samples, "signoff_operations_read_ok") == 1
