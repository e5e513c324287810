"""The console's incident page (``#/incident/<id>``) in a real Chromium against real
``signoff serve`` processes: opened from its own address, it shows the incident's timeline,
the proposal and the target it concerns, and works the incident with the API's own
mutations; a refusal is shown in words with the state unchanged, and a change made
elsewhere appears without a reload. The ``console-incident-phone`` screenshot is taken
here (``SIGNOFF_UPDATE_SCREENSHOTS=1``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page, expect

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
from tests.test_console_operations import OPEN_INCIDENT, RESOLVE, incident_when, only_incident
from tests.test_readme import delivering, forget_jobs

pytestmark = checked_once


async def open_incident_page(page: Page, server: Server, incident_id: str) -> None:
    """Follow the incident's shareable address, as a link from elsewhere would."""
    await page.goto(f"{server.url}/#/incident/{incident_id}")
    await expect(page.locator(".incident-page .back")).to_be_visible(timeout=LIVE_WITHIN)


def timeline_actions(page: Page) -> Any:
    return page.locator(".timeline li")


async def test_an_operator_works_an_incident_from_its_page(
    browser: Browser,
    serve: Serve,
    sessionmaker: SessionMaker,
    database_url: str,
    tmp_path: Path,
) -> None:
    """A receiver refuses (400) and an incident opens. Its page, opened from its address on
    a phone, shows the timeline (the dead letter, the incident opened), the failed proposal
    and its target; the operator acknowledges, retries once the receiver is fixed (the
    proposal shows APPLIED as the worker delivers it, without a reload), and resolves."""
    queue = unique_queue()
    server = await serve(SIGNOFF_EMBEDDED_WORKER="1", SIGNOFF_ARQ_QUEUE=queue)
    receiver = Receiver([Answer(400), Answer(200)])
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
                target = await target_name(gql, operator)
                await _work_it_from_its_page(browser, server, gql, operator, target, tmp_path)
            finally:
                await forget_jobs(queue, proposal["id"])


async def target_name(gql: GraphQLClient, token: str) -> str:
    [target] = (await gql("query { targets { name } }", {}, token))["targets"]
    name: str = target["name"]
    return name


async def _work_it_from_its_page(
    browser: Browser,
    server: Server,
    gql: GraphQLClient,
    operator: str,
    target: str,
    shots: Path,
) -> None:
    incident = await only_incident(gql, operator)
    context, page, errors = await signed_in(browser, server, operator, PHONE)
    try:
        await open_incident_page(page, server, incident["id"])
        await page.evaluate("window.sameDocument = true")
        await expect(page.locator(".work h2")).to_contain_text("failed terminally")
        await expect(page.locator(".incident-what .badge-open")).to_have_text("Open")
        actions = [
            await li.get_attribute("data-action") for li in await timeline_actions(page).all()
        ]
        assert "proposal.dead_lettered" in actions and "incident.opened" in actions, actions
        proposal_part = page.locator(".proposal-part")
        await expect(proposal_part).to_contain_text("refund.create")
        await expect(proposal_part.locator(".badge-failed")).to_have_text("Failed")
        await expect(proposal_part).to_contain_text("REQUEST_REJECTED")
        await expect(page.locator(".target-part .target-name")).to_have_text(target)
        buttons = page.locator(".actions").get_by_role("button")
        await expect(buttons).to_have_text(["Acknowledge", "Retry delivery"])
        await page.screenshot(path=screenshot_path("console-incident-phone", shots), full_page=True)

        await buttons.get_by_text("Acknowledge").click()
        await expect(page.locator("#notice")).to_have_text("Acknowledged.")
        await expect(page.locator(".incident-what .badge-acknowledged")).to_have_text(
            "Acknowledged"
        )
        await expect(
            page.locator('.timeline li[data-action="incident.acknowledged"]')
        ).to_contain_text("by ops")
        await expect(buttons).to_have_text(["Retry delivery"])

        await buttons.get_by_text("Retry delivery").click()
        await expect(page.locator("#notice")).to_have_text("Retried: the delivery is queued again.")
        # The real worker delivers it again and the fixed receiver applies it: the page
        # follows the proposal's events.
        await expect(proposal_part.locator(".badge-applied")).to_have_text(
            "Applied", timeout=LIVE_WITHIN
        )
        await expect(buttons).to_have_count(0)

        await page.get_by_text("Resolve…").click()
        await page.get_by_label("Resolution code").fill("receiver_fixed")
        await page.get_by_label("What was done").fill("The receiver was redeployed.")
        await page.get_by_role("button", name="Resolve").click()
        await expect(page.locator("#notice")).to_have_text("Resolved.")
        await expect(page.locator(".incident-what .badge-resolved")).to_have_text("Resolved")
        await expect(page.locator(".resolution")).to_contain_text("receiver_fixed")
        await expect(page.get_by_text("Resolve…")).to_have_count(0)
        resolved = await only_incident(gql, operator)
        assert (resolved["state"], resolved["resolutionCode"]) == ("RESOLVED", "receiver_fixed")
        assert await page.evaluate("window.sameDocument === true"), "the page was reloaded"
        assert context.outside == []  # type: ignore[attr-defined]
        assert errors == []
    finally:
        await context.close()


async def test_a_refusal_is_shown_in_words_and_a_change_elsewhere_appears(
    browser: Browser, serve: Serve, sessionmaker: SessionMaker
) -> None:
    """An incident raised about a target: its page names the target and no proposal. A
    resolution the server refuses (a summary too short once trimmed) is shown in words and
    leaves it open; when another operator resolves it, the page shows their resolution
    without a reload, with nothing left to press."""
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=0)
        first = await gql.token(Role.OPERATOR, name="ops-1")
        second = await gql.token(Role.OPERATOR, name="ops-2")
        raised = {
            "key": "refunds-slow",
            "severity": "HIGH",
            "category": "target_slow",
            "title": "Refunds answer slowly",
            "entityType": "target",
            "entityId": world.target_id,
        }
        await gql(OPEN_INCIDENT, {"input": raised}, first)
        incident = await only_incident(gql, world.admin)
        target = await target_name(gql, world.admin)
        context, page, errors = await signed_in(browser, server, first)
        try:
            await open_incident_page(page, server, incident["id"])
            await expect(page.locator(".work h2")).to_have_text("Refunds answer slowly")
            await expect(page.locator(".target-part .target-name")).to_have_text(target)
            await expect(page.locator(".proposal-part")).to_contain_text("It concerns no proposal.")
            await expect(
                page.locator('.timeline li[data-action="incident.opened"]')
            ).to_contain_text("by ops-1")

            await page.get_by_text("Resolve…").click()
            await page.get_by_label("Resolution code").fill("false_alarm")
            await page.get_by_label("What was done").fill("ok ")  # 3 characters, 2 trimmed
            await page.get_by_role("button", name="Resolve").click()
            await expect(page.locator("#notice")).to_have_text(
                "The resolution code or summary is not valid. (RESOLUTION_INVALID)"
            )
            await expect(page.locator(".incident-what .badge-open")).to_have_text("Open")
            assert (await only_incident(gql, world.admin))["state"] == "OPEN"

            await page.evaluate("window.sameDocument = true")
            theirs = {"code": "provider_recovered", "summary": "It answers quickly again."}
            await gql(RESOLVE, {"input": {"incidentId": incident["id"], **theirs}}, second)
            await expect(page.locator(".incident-what .badge-resolved")).to_have_text(
                "Resolved", timeout=LIVE_WITHIN
            )
            await expect(page.locator(".resolution")).to_contain_text("provider_recovered")
            await expect(
                page.locator('.timeline li[data-action="incident.resolved"]')
            ).to_contain_text("by ops-2")
            await expect(page.locator("main button")).to_have_count(0)
            assert await page.evaluate("window.sameDocument === true"), "the page was reloaded"
            assert errors == []
        finally:
            await context.close()
