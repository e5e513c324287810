"""The console's Operations page in a real Chromium against real ``signoff serve`` processes:
an operator works an incident from open to resolved with the page's buttons, a refusal
leaves the state as the server has it, and a reviewer gets no buttons at all. The
``console-operations`` screenshot is taken here (``SIGNOFF_UPDATE_SCREENSHOTS=1``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Locator, Page, expect

from signoff.database import SessionMaker
from signoff.models import Role
from tests.browser import screenshot_path
from tests.conftest import checked_once
from tests.helpers import GraphQLClient, build_world
from tests.live import Server, http_gql, server_log_on_failure
from tests.receivers import Answer, Receiver
from tests.receivers import serve as serve_receiver
from tests.redis_keys import unique_queue
from tests.test_console import LIVE_WITHIN, PHONE, Serve, signed_in
from tests.test_readme import delivering, forget_jobs

pytestmark = checked_once

INCIDENTS = """query {
  incidents(first: 20) {
    nodes { id state resolutionCode resolutionSummary proposal { id state deliveryTerminal } }
  }
}"""
OPEN_INCIDENT = """mutation($input: OpenIncidentInput!) {
  openIncident(input: $input) { incident { id state } }
}"""
RESOLVE = """mutation($input: ResolveIncidentInput!) {
  resolveIncident(input: $input) { incident { id state } }
}"""
REACHED_WITHIN = 30  # seconds for a delivery by a real worker


async def only_incident(gql: GraphQLClient, token: str) -> dict[str, Any]:
    nodes = (await gql(INCIDENTS, {}, token))["incidents"]["nodes"]
    assert len(nodes) == 1, nodes
    incident: dict[str, Any] = nodes[0]
    return incident


async def incident_when(
    gql: GraphQLClient,
    token: str,
    ready: Callable[[dict[str, Any]], bool],
    within: float = REACHED_WITHIN,
) -> dict[str, Any]:
    """The only incident, once ``ready(incident)`` holds (a real worker moves it)."""
    deadline = time.monotonic() + within
    while True:
        nodes = (await gql(INCIDENTS, {}, token))["incidents"]["nodes"]
        if len(nodes) == 1 and ready(nodes[0]):
            found: dict[str, Any] = nodes[0]
            return found
        assert time.monotonic() < deadline, f"the incident did not get there in time: {nodes}"
        await asyncio.sleep(0.2)


def row_of(page: Page, incident: dict[str, Any]) -> Locator:
    return page.locator(f'[data-incident-id="{incident["id"]}"]')


async def open_operations(page: Page) -> None:
    await page.get_by_role("link", name="Operations").click()
    await expect(page.locator(".work h2")).to_have_text("Operations")


async def test_an_operator_acknowledges_retries_and_resolves_an_incident(
    browser: Browser,
    serve: Serve,
    sessionmaker: SessionMaker,
    database_url: str,
    tmp_path: Path,
) -> None:
    """The README's "Work an incident from open to resolved", from the Operations page: a
    receiver refuses (400) and an incident opens; the operator acknowledges it, retries the
    delivery once the receiver is fixed, and resolves it. Each button is there only while
    the state allows it, the page shows each new state without a reload, and pressing
    Retry twice sends it once."""
    queue = unique_queue()
    server = await serve(SIGNOFF_EMBEDDED_WORKER="1", SIGNOFF_ARQ_QUEUE=queue)
    receiver = Receiver([Answer(400), Answer(200)])  # refuses, then is fixed
    proposal: dict[str, Any] = {"id": "none yet"}
    async with serve_receiver(receiver), http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1, url=receiver.url)
        receiver.secret = world.signing_secret
        operator = await gql.token(Role.OPERATOR, name="ops")
        with delivering(database_url, queue, tmp_path), server_log_on_failure(server):
            try:
                made = (await world.propose({"amount": 1200, "currency": "EUR"}))["proposal"]
                proposal.update(made)
                await world.decide(world.reviewers[0], made)
                await incident_when(gql, operator, lambda i: i["proposal"]["deliveryTerminal"])
                await _work_the_incident(browser, server, gql, operator, tmp_path / "shots")
            finally:
                await forget_jobs(queue, proposal["id"])


async def _work_the_incident(
    browser: Browser, server: Server, gql: GraphQLClient, operator: str, shots: Path
) -> None:
    context, page, errors = await signed_in(browser, server, operator)
    await page.evaluate("window.sameDocument = true")
    await open_operations(page)
    incident = await only_incident(gql, operator)
    row = row_of(page, incident)
    await expect(row.locator(".badge-open")).to_have_text("Open")
    await expect(row.get_by_role("button")).to_have_text(["Acknowledge", "Retry delivery"])
    await expect(row.get_by_text("Resolve…")).to_be_visible()
    await page.screenshot(path=screenshot_path("console-operations", shots), full_page=True)

    await row.get_by_role("button", name="Acknowledge").click()
    await expect(page.locator("#notice")).to_have_text("Acknowledged.")
    await expect(row.locator(".badge-acknowledged")).to_have_text("Acknowledged")
    await expect(row.get_by_role("button")).to_have_text(["Retry delivery"])
    assert (await only_incident(gql, operator))["state"] == "ACKNOWLEDGED"

    retries: list[str] = []
    page.on(
        "request",
        lambda r: retries.append(r.url) if "retryIncident" in (r.post_data or "") else None,
    )
    await row.get_by_role("button", name="Retry delivery").dblclick()
    await expect(page.locator("#notice")).to_have_text("Retried: the delivery is queued again.")
    await expect(row.get_by_role("button", name="Retry delivery")).to_have_count(0)
    assert len(retries) == 1, retries
    # The real worker delivers it again; the receiver, fixed, applies it. The live events
    # of that delivery leave the Operations page where it is.
    applied = await incident_when(gql, operator, lambda i: i["proposal"]["state"] == "APPLIED")
    assert applied["state"] == "ACKNOWLEDGED"
    await asyncio.sleep(1)
    await expect(page.locator(".work h2")).to_have_text("Operations")

    await row.get_by_text("Resolve…").click()
    await row.get_by_label("Resolution code").fill("receiver_fixed")
    await row.get_by_label("What was done").fill("The receiver was redeployed.")
    await row.get_by_role("button", name="Resolve").click()
    await expect(page.locator("#notice")).to_have_text("Resolved.")
    await expect(row.locator(".badge-resolved")).to_have_text("Resolved")
    await expect(row.get_by_role("button")).to_have_count(0)
    await expect(row.get_by_text("Resolve…")).to_have_count(0)
    resolved = await only_incident(gql, operator)
    assert (resolved["state"], resolved["resolutionCode"]) == ("RESOLVED", "receiver_fixed")

    assert await page.evaluate("window.sameDocument === true"), "the page was reloaded"
    assert context.outside == []  # type: ignore[attr-defined]
    await context.close()
    assert errors == []


async def test_a_refused_move_shows_why_and_the_state_the_server_has(
    browser: Browser, serve: Serve, sessionmaker: SessionMaker
) -> None:
    """Two operators on one incident: while the first has it open, the second resolves it.
    The first one's Resolve is refused with its sentence; the resolution stays the second
    operator's and the page shows it, with no buttons left. An incident with no failed
    delivery has no Retry button."""
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=0)
        first = await gql.token(Role.OPERATOR, name="ops-1")
        second = await gql.token(Role.OPERATOR, name="ops-2")
        raised = {
            "key": "psp-outage",
            "severity": "CRITICAL",
            "category": "provider_outage",
            "title": "The payment provider answers 503",
        }
        await gql(OPEN_INCIDENT, {"input": raised}, first)
        incident = await only_incident(gql, world.admin)
        context, page, errors = await signed_in(browser, server, first)
        try:
            await open_operations(page)
            row = row_of(page, incident)
            await expect(row.get_by_role("button")).to_have_text(["Acknowledge"])
            await row.get_by_text("Resolve…").click()
            await row.get_by_label("Resolution code").fill("provider_recovered")
            await row.get_by_label("What was done").fill("It answers again.")

            theirs = {"code": "false_alarm", "summary": "Our monitor was wrong."}
            await gql(RESOLVE, {"input": {"incidentId": incident["id"], **theirs}}, second)
            await row.get_by_role("button", name="Resolve").click()
            await expect(page.locator("#notice")).to_have_text(
                "The incident is already resolved. (INCIDENT_RESOLVED)"
            )
            await expect(row.locator(".badge-resolved")).to_have_text("Resolved")
            await expect(row).to_contain_text("false_alarm")
            await expect(row.get_by_role("button")).to_have_count(0)
            after = await only_incident(gql, world.admin)
            assert (after["state"], after["resolutionCode"], after["resolutionSummary"]) == (
                "RESOLVED",
                "false_alarm",
                "Our monitor was wrong.",
            )
            # The refusal is an answer, not a page error.
            assert errors == []
        finally:
            await context.close()


async def test_a_reviewer_gets_no_incident_buttons(
    browser: Browser, serve: Serve, sessionmaker: SessionMaker
) -> None:
    """Incidents are the operators' (and admins'): a reviewer has no Operations link, and
    one who opens ``#/operations`` anyway is told whose page it is, with nothing to press."""
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1)
        raised = {"key": "k", "severity": "LOW", "category": "manual", "title": "Look at this"}
        await gql(OPEN_INCIDENT, {"input": raised}, world.admin)
    context, page, errors = await signed_in(browser, server, world.reviewers[0])
    try:
        await expect(page.get_by_role("link", name="Operations")).to_have_count(0)
        await page.goto(server.url + "/#/operations")
        await expect(page.locator(".work h2")).to_have_text("Operations", timeout=LIVE_WITHIN)
        await expect(page.locator(".work")).to_contain_text(
            "The Operations page is for operators and admins."
        )
        await expect(page.locator(".incident")).to_have_count(0)
        await expect(page.locator("main button")).to_have_count(0)
        assert errors == []
    finally:
        await context.close()


def count_of(page: Page, key: str) -> Locator:
    """The number beside a state's or a severity's badge on the Operations page."""
    return page.locator(f'.counts li[data-key="{key}"] .number')


async def column_total(page: Page, chart: str, column: int) -> float:
    """The sum of one column of a chart's table (0: the hour; "—" counts as nothing)."""
    total: float = await page.evaluate(
        """([chart, column]) => [...document.querySelectorAll(`#${chart} tbody tr`)]
            .map((row) => row.children[column].textContent)
            .filter((text) => text !== "—")
            .reduce((sum, text) => sum + Number(text), 0)""",
        [chart, column],
    )
    return total


async def painted(page: Page, chart: str) -> int:
    """How many of a chart's canvas pixels uPlot painted (not left transparent)."""
    count: int = await page.evaluate(
        """(chart) => {
            const canvas = document.querySelector(`#${chart} canvas`);
            const { width, height } = canvas;
            const pixels = canvas.getContext("2d").getImageData(0, 0, width, height).data;
            let painted = 0;
            for (let i = 3; i < pixels.length; i += 4) if (pixels[i]) painted += 1;
            return painted;
        }""",
        chart,
    )
    return count


async def test_the_operations_page_stays_live_and_charts_the_last_day(
    browser: Browser, serve: Serve, sessionmaker: SessionMaker, tmp_path: Path
) -> None:
    """On a phone, an operator's Operations page charts the last day (a proposal decided
    before it opened is in the throughput and time-to-decision charts), and its counts
    follow the feed without a reload: a proposal arriving counts under Approval required,
    an incident opening counts under its severity, lists, and charts as open."""
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1)
        operator = await gql.token(Role.OPERATOR, name="ops")
        decided = (await world.propose({"amount": 10, "currency": "EUR"}))["proposal"]
        await world.decide(world.reviewers[0], decided)
        context, page, errors = await signed_in(browser, server, operator, PHONE)
        try:
            await page.evaluate("window.sameDocument = true")
            await open_operations(page)
            charts = page.locator("figure.chart")
            await expect(charts).to_have_count(3)
            await expect(charts.locator("canvas")).to_have_count(3)
            await expect(page.locator("main .loading")).to_have_count(0)  # drawn, not stale
            # uPlot's stylesheet came with the charts, once.
            await expect(page.locator('link[href="/static/vendor/uPlot.min.css"]')).to_have_count(1)
            await expect(page.locator(".last-day")).to_contain_text("1 decided; half within")
            assert await column_total(page, "chart-throughput", 1) == 1  # decided
            assert (
                await page.locator("#chart-decision-time tbody td:nth-child(2)")
                .filter(has_not_text="—")
                .count()
                == 1
            )
            for chart in ("chart-throughput", "chart-decision-time", "chart-incidents"):
                assert await painted(page, chart) > 0, chart
            await expect(count_of(page, "APPROVAL_REQUIRED")).to_have_text("0")
            await expect(count_of(page, "CRITICAL")).to_have_text("0")

            await world.propose({"amount": 20, "currency": "EUR"})
            await expect(count_of(page, "APPROVAL_REQUIRED")).to_have_text("1", timeout=LIVE_WITHIN)

            raised = {
                "key": "psp-outage",
                "severity": "CRITICAL",
                "category": "provider_outage",
                "title": "The payment provider answers 503",
            }
            await gql(OPEN_INCIDENT, {"input": raised}, operator)
            await expect(count_of(page, "CRITICAL")).to_have_text("1", timeout=LIVE_WITHIN)
            row = page.locator(".incident", has_text="The payment provider answers 503")
            await expect(row.get_by_role("button")).to_have_text(["Acknowledge"])
            # The charts' figures are read again at most every 10 s.
            await expect(page.locator("#chart-incidents tbody tr").last).to_contain_text(
                "1", timeout=LIVE_WITHIN
            )
            await page.screenshot(
                path=screenshot_path("console-operations-phone", tmp_path), full_page=True
            )
            assert await page.evaluate("window.sameDocument === true"), "the page was reloaded"
            assert context.outside == []  # type: ignore[attr-defined]
            assert errors == []
        finally:
            await context.close()
