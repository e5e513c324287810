"""Issue 43: axe-core finds no serious or critical accessibility violation on the console's
views, in a real Chromium, each drawn with what it shows in use (rows, filters, a
decision form). Each view added to the console adds its case here."""

from __future__ import annotations

from playwright.async_api import Browser, Page, expect

from tests.browser import axe_violations, browser
from tests.conftest import ModuleServer
from tests.helpers import build_world, unique_name
from tests.live import http_gql
from tests.test_console import PHONE, signed_in

__all__ = ["browser"]


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
