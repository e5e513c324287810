"""A single-use approval link in a real Chromium against a real ``signoff serve``: opening it
(as a mail scanner or a preview would) changes nothing, pressing Approve decides once as
the link's reviewer, and the link then says it was used."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from playwright.async_api import Browser, expect

from signoff.database import SessionMaker
from tests.browser import browser, console_errors, offline_context
from tests.helpers import build_world
from tests.live import Server, http_gql
from tests.schema.test_approval_links import CREATE_LINK, actor_id, counts, proposal_state

__all__ = ["browser"]

Serve = Callable[..., Awaitable[Server]]


async def test_a_link_opened_twice_then_approved_decides_once(
    browser: Browser, serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql)
        proposed = await world.propose({"amount": 321, "currency": "EUR"})
        created = (
            await gql(
                CREATE_LINK,
                {
                    "input": {
                        "taskId": proposed["task"]["id"],
                        "reviewerId": await actor_id(gql, world.reviewers[0]),
                    }
                },
                world.admin,
            )
        )["createApprovalLink"]
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
