"""Issue 43: a reviewer's day with the keyboard alone, at phone width, in a real Chromium
against a real ``signoff serve``: sign in, open the first task, claim it, approve it, open
the History and the proposal just decided, without one pointer event reaching the page.
The ``console-tasks-phone`` screenshot is taken here (``SIGNOFF_UPDATE_SCREENSHOTS=1``)."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, Page, expect

from tests.browser import offline_context, screenshot_path
from tests.conftest import ModuleServer, checked_once
from tests.helpers import build_world, unique_name
from tests.live import http_gql
from tests.test_console import LIVE_WITHIN, PHONE

pytestmark = checked_once

# Counts every pointer event the page receives: a keyboard-only run leaves it at zero.
COUNT_POINTER_EVENTS = """
window.pointerEvents = 0;
for (const kind of ["pointerdown", "mousedown", "mouseup", "pointerup"]) {
  window.addEventListener(kind, () => { window.pointerEvents += 1; }, true);
}
"""


async def _focused(page: Page) -> str:
    focused: str = await page.evaluate(
        "() => document.activeElement ? document.activeElement.textContent.trim() : ''"
    )
    return focused


async def _tab_to(page: Page, words: str, presses: int = 40) -> None:
    """Tab forward until the focused element reads ``words``, as a keyboard user would."""
    for _ in range(presses):
        if words in await _focused(page):
            return
        await page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {words!r}")


async def test_claim_approve_and_open_the_history_without_the_mouse(
    browser: Browser, module_server: ModuleServer, tmp_path: Path
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewer_names=unique_name("keys"))
        proposed = await world.propose({"amount": 4500, "currency": "EUR"})
    proposal = proposed["proposal"]
    context = await offline_context(browser, viewport=PHONE)
    try:
        page = await context.new_page()
        await page.add_init_script(COUNT_POINTER_EVENTS)
        await page.goto(server.url + "/")
        # The token field has the focus on arrival; Enter signs in.
        await expect(page.locator("#token")).to_be_focused()
        await page.keyboard.type(world.reviewers[0])
        await page.keyboard.press("Enter")
        await expect(page.locator("#live")).to_have_text("Live", timeout=LIVE_WITHIN)
        await expect(page.locator(".task")).to_have_count(1)
        await page.screenshot(path=screenshot_path("console-tasks-phone", tmp_path), full_page=True)

        await page.keyboard.press("j")
        await page.keyboard.press("Enter")
        await expect(page.locator("#digest")).to_have_text(proposal["payloadDigest"])
        await page.keyboard.press("c")
        await expect(page.locator(".facts")).to_contain_text("Claimed byyou")
        await page.keyboard.press("a")
        await expect(page.locator("#approvals-title")).to_have_text("Approvals: 1 of 1")

        await page.keyboard.press("h")
        await expect(page).to_have_url(f"{server.url}/#/history")
        row = page.locator(f'.history-row[data-proposal-id="{proposal["id"]}"]')
        await expect(row).to_have_count(1)
        await _tab_to(page, "refund.create")
        await page.keyboard.press("Enter")
        await expect(page).to_have_url(f"{server.url}/#/proposal/{proposal['id']}")
        await expect(page.locator(".facts")).to_contain_text(proposal["payloadDigest"])

        assert await page.evaluate("() => window.pointerEvents") == 0
    finally:
        await context.close()
