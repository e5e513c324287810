"""Issue 43: axe-core finds no serious or critical accessibility violation on the console's
views, in a real Chromium, each drawn with what it shows in use (rows, filters, a
decision form). Each view added to the console adds its case here."""

from __future__ import annotations

from playwright.async_api import Browser, Page, expect

from tests.browser import axe_violations
from tests.conftest import ModuleServer, checked_once
from tests.helpers import build_world, unique_name
from tests.live import http_gql
from tests.test_console import PHONE, signed_in

pytestmark = checked_once


async def no_violations(page: Page, view: str) -> None:
    found = await axe_violations(page)
    assert found == [], f"{view}: {found}"


async def test_the_list_and_proposal_views_have_no_serious_violation(
    browser: Browser, module_server: ModuleServer
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(
            gql,
            reviewers=1,
            required_approvals=2,
            summaryField="amount",
            reviewer_names=unique_name("axe"),
        )
        made = await world.propose({"amount": 4500, "currency": "EUR"})
        await world.propose({"amount": 90, "currency": "USD"}, subject={"order": "o-2"})
    for viewport in (None, PHONE):
        options = {} if viewport is None else {"viewport": viewport}
        context, page, errors = await signed_in(browser, server, world.reviewers[0], **options)
        try:
            await expect(page.locator(".task")).to_have_count(2)
            await page.locator(f"#pick-{made['task']['id']}").check()  # the bulk bar too
            await expect(page.locator("#bulk-count")).to_be_visible()
            await no_violations(page, "task list")

            await page.goto(f"{server.url}/#/task/{made['task']['id']}")
            await expect(page.locator("#standing")).to_be_visible()
            await page.get_by_text("Amend the payload instead of rejecting it").click()
            await no_violations(page, "proposal")
            if viewport is None:  # decided once; at phone width it reads as decided
                await page.get_by_role("button", name="Approve").click()
            await expect(page.locator("#standing-summary")).to_contain_text("You approved")
            await no_violations(page, "proposal, decided")
            assert errors == []
        finally:
            await context.close()


async def test_the_history_and_a_proposals_story_have_no_serious_violation(
    browser: Browser, module_server: ModuleServer
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=2, reviewer_names=unique_name("axe-story"))
        approved = (await world.propose({"amount": 4500, "currency": "EUR"}))["proposal"]
        rejected = (await world.propose({"amount": 90, "currency": "USD"}))["proposal"]
        await world.decide(world.reviewers[0], approved)
        await world.decide(world.reviewers[1], rejected, decision="REJECTED", reason="No order.")
    for viewport in (None, PHONE):
        options = {} if viewport is None else {"viewport": viewport}
        context, page, errors = await signed_in(browser, server, world.reviewers[0], **options)
        try:
            await page.goto(f"{server.url}/#/history?reviewer=")
            await expect(page.locator(".history-row")).to_have_count(2)
            await no_violations(page, "history")

            await page.goto(f"{server.url}/#/proposal/{rejected['id']}")
            await expect(page.locator(".timeline-entry")).to_have_count(3)
            await no_violations(page, "a proposal's story")
            assert errors == []
        finally:
            await context.close()


async def test_the_harness_reports_a_serious_violation(
    browser: Browser, module_server: ModuleServer
) -> None:
    """What a clean run is worth: a field without a label, added to a view, is reported."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1, reviewer_names=unique_name("axe-bad"))
    context, page, _ = await signed_in(browser, server, world.reviewers[0])
    try:
        await page.evaluate(
            "document.querySelector('main').append(Object.assign("
            "document.createElement('input'), {id: 'unlabelled'}))"
        )
        found = await axe_violations(page)
        assert [v["id"] for v in found] == ["label"], found
        assert found[0]["nodes"] == ["#unlabelled"]
    finally:
        await context.close()


async def test_the_operations_and_incident_views_have_no_serious_violation(
    browser: Browser, module_server: ModuleServer
) -> None:
    """The Operations page with its charts (a chart's table opened) and an incident's
    Resolve form open, and an incident's page with its proposal, target and timeline."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1, reviewer_names=unique_name("axe-ops"))
        decided = await world.propose({"amount": 10, "currency": "EUR"})
        await world.decide(world.reviewers[0], decided["proposal"])
        operator = await gql.token("operator", name=unique_name("axe-ops"))
        raised = {
            "key": unique_name("axe-incident"),
            "severity": "HIGH",
            "category": "target_slow",
            "title": "Refunds answer slowly",
            "entityType": "target",
            "entityId": world.target_id,
        }
        opened = await gql(
            "mutation($input: OpenIncidentInput!) { openIncident(input: $input) "
            "{ incident { id } } }",
            {"input": raised},
            operator,
        )
        incident_id = opened["openIncident"]["incident"]["id"]
    for viewport in (None, PHONE):
        options = {} if viewport is None else {"viewport": viewport}
        context, page, errors = await signed_in(browser, server, operator, **options)
        try:
            await page.goto(f"{server.url}/#/operations")
            await expect(page.locator("figure.chart canvas")).to_have_count(3)
            await page.get_by_text("Proposals per hour, hour by hour").click()
            row = page.locator(f'[data-incident-id="{incident_id}"]')
            await row.get_by_text("Resolve…").click()
            await no_violations(page, "operations")

            await page.goto(f"{server.url}/#/incident/{incident_id}")
            await expect(page.locator(".timeline li")).not_to_have_count(0)
            await page.get_by_text("Resolve…").click()
            await no_violations(page, "incident")
            assert errors == []
        finally:
            await context.close()
