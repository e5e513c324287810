"""A single-use approval link in a real Chromium against a real ``signoff serve``: opening it
(as a mail scanner or a preview would) changes nothing, pressing Approve decides once as
the link's reviewer, and the link then says it was used. The page wears the console's
stylesheet; its screenshot (``approval-link``) is taken here (``SIGNOFF_UPDATE_SCREENSHOTS=1``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page, expect

from tests.browser import console_errors, offline_context, screenshot_path
from tests.conftest import ModuleServer
from tests.helpers import GraphQLClient, World, build_world, unique_name
from tests.live import Server, http_gql
from tests.schema.test_approval_links import CREATE_LINK, actor_id, counts, proposal_state

Serve = Callable[..., Awaitable[Server]]

# What the console's stylesheet decides, read from a page as Chromium computed it.
LOOK = """() => {
    const root = getComputedStyle(document.documentElement);
    const button = document.querySelector("button.primary");
    return {
        fontFamily: getComputedStyle(document.body).fontFamily,
        color: getComputedStyle(document.body).color,
        accent: root.getPropertyValue("--accent").trim(),
        ink: root.getPropertyValue("--ink").trim(),
        header: getComputedStyle(document.querySelector("header.bar")).backgroundColor,
        primaryButton: button && getComputedStyle(button).backgroundColor,
        sheets: [...document.styleSheets].map((sheet) => new URL(sheet.href).pathname),
    };
}"""


async def make_link(gql: GraphQLClient, world: World, payload: dict[str, Any]) -> Any:
    proposed = await world.propose(payload)
    created = await gql(
        CREATE_LINK,
        {
            "input": {
                "taskId": proposed["task"]["id"],
                "reviewerId": await actor_id(gql, world.reviewers[0]),
            }
        },
        world.admin,
    )
    return proposed, created["createApprovalLink"]


async def look_of(page: Page) -> dict[str, Any]:
    look: dict[str, Any] = await page.evaluate(LOOK)
    return look


async def test_a_link_opened_twice_then_approved_decides_once(
    browser: Browser, module_server: ModuleServer
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewer_names=unique_name("reviewer"))
        proposed, created = await make_link(gql, world, {"amount": 321, "currency": "EUR"})
        context = await offline_context(browser)
        page = await context.new_page()
        errors = console_errors(page)
        try:
            before = await counts(gql)
            for _ in range(2):  # a scanner's fetch, then the reviewer's own
                shown = await page.goto(server.url + created["path"])
                assert shown is not None and shown.status == 200
            await expect(page.locator("body")).to_contain_text(
                proposed["proposal"]["payloadDigest"]
            )
            await expect(page.locator("pre")).to_contain_text('"amount": 321')
            assert await counts(gql) == before
            assert await proposal_state(gql, proposed["proposal"]["id"]) == "APPROVAL_REQUIRED"

            await page.get_by_label("Reason (optional)").fill("Checked the parcel.")
            await page.get_by_role("button", name="Approve").click()
            await expect(page.locator("body")).to_contain_text("QUEUED")
            assert await proposal_state(gql, proposed["proposal"]["id"]) == "QUEUED"
            assert errors == []

            # Chromium logs the 410 itself as a console error: that one is expected.
            again = await page.goto(server.url + created["path"])
            assert again is not None and again.status == 410
            await expect(page.locator("body")).to_contain_text("USED")
            assert context.outside == []  # type: ignore[attr-defined]
        finally:
            await context.close()


async def test_the_link_page_wears_the_consoles_stylesheet(
    browser: Browser, module_server: ModuleServer, tmp_path: Path
) -> None:
    """Issue 35: the link page was unstyled (the browser's serif defaults). It now loads
    the console's own stylesheet, so its fonts, colours and buttons are the console's."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewer_names=unique_name("reviewer"))
        _, created = await make_link(gql, world, {"amount": 321, "currency": "EUR"})
    context = await offline_context(browser, viewport={"width": 1000, "height": 900})
    try:
        page = await context.new_page()
        errors = console_errors(page)
        await page.goto(server.url + "/")
        await page.get_by_label("API token").wait_for()
        console = await look_of(page)
        await page.goto(server.url + created["path"])
        await expect(page.get_by_role("button", name="Approve")).to_be_visible()
        link = await look_of(page)
        assert console["sheets"] == link["sheets"] == ["/static/console/console.css"]
        assert console["accent"] and console["ink"]
        for key in ("fontFamily", "color", "accent", "ink", "header", "primaryButton"):
            assert link[key] == console[key], key
        await page.screenshot(path=screenshot_path("approval-link", tmp_path), full_page=True)
        assert errors == []
        assert context.outside == []  # type: ignore[attr-defined]
    finally:
        await context.close()
