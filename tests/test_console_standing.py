"""Issue 43, item 2: a reviewer sees where they stand on a proposal in a real Chromium.
After approving one of two required approvals the task page says "You approved · waiting
for 1 more reviewer" and who has decided, and offers no decision they cannot make; the
second reviewer is still offered both."""

from __future__ import annotations

from playwright.async_api import Browser, expect

from tests.conftest import ModuleServer, checked_once
from tests.helpers import build_world, unique_name
from tests.live import http_gql
from tests.test_console import LIVE_WITHIN, signed_in

pytestmark = checked_once


async def test_after_one_of_two_approvals_the_approver_is_told_they_wait(
    browser: Browser, module_server: ModuleServer
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    names = unique_name("standing")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=2, required_approvals=2, reviewer_names=names)
        made = await world.propose({"amount": 4500, "currency": "EUR"})
    first, page, errors = await signed_in(browser, server, world.reviewers[0])
    second, other, other_errors = await signed_in(browser, server, world.reviewers[1])
    try:
        task_url = f"{server.url}/#/task/{made['task']['id']}"
        await page.goto(task_url)
        await expect(page.locator("#standing-decided")).to_have_text(
            "Nobody has decided this revision yet."
        )
        await page.get_by_role("button", name="Approve").click()
        await expect(page.locator("#notice")).to_have_text("Approved.")
        await expect(page.locator("#standing-summary")).to_have_text(
            "You approved · waiting for 1 more reviewer"
        )
        await expect(page.locator("#standing-decided")).to_have_text(
            f"Decided so far: {names}-0 (approved)."
        )
        for absent in ("#approve", "#reject", "form.decide"):
            await expect(page.locator(absent)).to_have_count(0)
        await page.keyboard.press("a")  # the shortcut has nothing to press either
        await expect(page.locator("#notice")).to_have_text("Approved.")

        # The second reviewer is offered both decisions, and sees who decided.
        await other.goto(task_url)
        await expect(other.locator("#standing-summary")).to_have_text("Waiting for 1 more reviewer")
        await expect(other.locator("#standing-decided")).to_contain_text(f"{names}-0 (approved)")
        await expect(other.get_by_role("button", name="Approve")).to_be_visible()
        await expect(other.get_by_role("button", name="Reject")).to_be_visible()
        await other.get_by_role("button", name="Approve").click()
        # The first reviewer's page follows live: approved, nothing left to decide.
        await expect(page.locator(".facts")).to_contain_text("Proposal", timeout=LIVE_WITHIN)
        await expect(page.locator("#standing")).to_have_count(0, timeout=LIVE_WITHIN)
        await expect(page.locator("#approvals-title")).to_have_text("Approvals: 2 of 2")
        assert errors == [] and other_errors == []
    finally:
        await first.close()
        await second.close()
