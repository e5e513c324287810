"""Issue 43, items 1 and 5 in a real Chromium: a task list you can scan. Each row reads the
action, the target's summary with its currency, the subject, the proposer, its age and the
time left (relative, in the reader's locale, the exact time on hover), states in words,
and opens its proposal wherever it is clicked. Filters (unclaimed, claimed by me, overdue,
by target) with their counts, a sort and a search live in the address, so a link opens
the same list for another reviewer."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from typing import Any

from playwright.async_api import Browser, Locator, Page, expect
from sqlmodel import col, update

from signoff import clock
from signoff.database import SessionMaker
from signoff.models import HumanTask
from tests.conftest import ModuleServer, checked_once
from tests.helpers import (
    CLAIM,
    PAYMENT_SCHEMA,
    PROPOSE,
    REGISTER_TARGET,
    GraphQLClient,
    World,
    build_world,
    create_tasks,
    unique_name,
)
from tests.live import http_gql
from tests.test_console import signed_in

pytestmark = checked_once


async def money(page: Page, amount: float, currency: str) -> str:
    """The amount as the page's locale writes it with its currency."""
    text: str = await page.evaluate(
        "([n, c]) => new Intl.NumberFormat(undefined, {style: 'currency', currency: c}).format(n)",
        [amount, currency],
    )
    return text


async def propose_on(
    world: World, target_id: str, payload: dict[str, Any], subject: dict[str, Any]
) -> dict[str, Any]:
    given = {
        "targetId": target_id,
        "actionCode": "payout.create",
        "subject": subject,
        "payload": payload,
        "operationKey": uuid.uuid4().hex,
    }
    made: dict[str, Any] = (await world.gql(PROPOSE, {"input": given}, world.agent))[
        "proposeAction"
    ]
    return made


async def make_overdue(sessionmaker: SessionMaker, task_id: str) -> None:
    """The task's due time two hours ago, as if they had passed."""
    async with sessionmaker() as session:
        past = clock.now() - timedelta(hours=2)
        await session.exec(
            update(HumanTask).where(col(HumanTask.id) == task_id).values(due_at=past)
        )
        await session.commit()


async def build_list(gql: GraphQLClient, sessionmaker: SessionMaker) -> dict[str, Any]:
    """Two targets in one queue, three proposals and a review task that is overdue; the
    largest proposal claimed by the first reviewer."""
    names = unique_name("lister")
    world = await build_world(gql, reviewers=2, summaryField="amount", reviewer_names=names)
    registered = await gql(
        REGISTER_TARGET,
        {
            "input": {
                "name": f"payouts-{uuid.uuid4().hex[:6]}",
                "url": "http://127.0.0.1:9/hook",
                "inputSchema": PAYMENT_SCHEMA,
                "queueId": world.queue_id,
                "summaryField": "amount",
            }
        },
        world.admin,
    )
    payouts = registered["registerTarget"]["target"]
    big = await world.propose({"amount": 4500, "currency": "EUR"}, subject={"order": "o-big"})
    small = await world.propose({"amount": 90, "currency": "USD"}, subject={"order": "o-small"})
    payout = await propose_on(
        world, payouts["id"], {"amount": 700, "currency": "GBP"}, {"customer": "Ada Lovelace"}
    )
    (review,) = await create_tasks(gql, world.admin, world.queue_id, 1, label="check-ledger")
    await make_overdue(sessionmaker, review)
    await gql(CLAIM, {"id": big["task"]["id"]}, world.reviewers[0])
    return {
        "world": world,
        "names": names,
        "payouts": payouts,
        "big": big["task"]["id"],
        "small": small["task"]["id"],
        "payout": payout["task"]["id"],
        "review": review,
    }


def row(page: Page, task_id: str) -> Locator:
    return page.locator(f'.task[data-task-id="{task_id}"]')


async def shown_ids(page: Page) -> list[str]:
    ids: list[str] = await page.locator(".task").evaluate_all(
        "(rows) => rows.map((r) => r.dataset.taskId)"
    )
    return ids


async def expect_counts(page: Page, counts: dict[str, int]) -> None:
    for show, count in counts.items():
        await expect(page.locator(f'.show[data-show="{show}"] .count')).to_have_text(str(count))


async def test_rows_read_the_action_the_amount_with_its_currency_and_the_time_left(
    browser: Browser, module_server: ModuleServer
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        made = await build_list(gql, sessionmaker)
    world = made["world"]
    context, page, errors = await signed_in(browser, server, world.reviewers[0])
    try:
        await expect(page.locator(".task")).to_have_count(4)
        big = row(page, made["big"])
        await expect(big.locator(".task-link")).to_have_text(
            re.compile(r"^Approve refund\.create on refunds-")
        )
        await expect(big.locator(".summary")).to_have_text(await money(page, 4500, "EUR"))
        await expect(row(page, made["small"]).locator(".summary")).to_have_text(
            await money(page, 90, "USD")
        )
        await expect(big).to_contain_text("order o-big")
        await expect(big).to_contain_text("proposed by agent")
        await expect(big).to_contain_text("claimed by you")
        # States in words; times relative, the exact one on hover and in datetime.
        await expect(big.locator(".badge-approval_required")).to_have_text("Approval required")
        await expect(big.locator(".badge-claimed")).to_have_text("Claimed")
        due = big.locator(".due time")
        await expect(due).to_have_text(re.compile(r"^in \d+ hours$"))
        exact = await due.evaluate(
            "(t) => t.title === new Date(t.getAttribute('datetime')).toLocaleString()"
        )
        assert exact, await due.get_attribute("title")
        await expect(big.locator(".task-what time")).to_have_text(
            re.compile(r"^(now|\d+ seconds? ago|\d+ minutes? ago)$")
        )
        overdue = row(page, made["review"]).locator(".due.overdue")
        await expect(overdue).to_have_text(re.compile(r"^overdue, due 2 hours ago$"))

        # The whole row opens the proposal, not only its title.
        # (The row's link lies over all of it: a click on its meta line lands on the link.)
        box = await row(page, made["small"]).locator(".task-meta").bounding_box()
        assert box is not None
        await page.mouse.click(box["x"] + box["width"] - 5, box["y"] + box["height"] / 2)
        await expect(page).to_have_url(re.compile(f"#/task/{made['small']}$"))
        await expect(page.locator("#digest")).to_be_visible()
        assert errors == []
    finally:
        await context.close()


async def test_filters_counts_sort_and_search_live_in_a_link_another_reviewer_opens(
    browser: Browser, module_server: ModuleServer
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        made = await build_list(gql, sessionmaker)
    world = made["world"]
    context, page, errors = await signed_in(browser, server, world.reviewers[0])
    try:
        await expect(page.locator(".task")).to_have_count(4)
        await expect_counts(page, {"all": 4, "unclaimed": 3, "mine": 1, "overdue": 1})

        await page.locator('.show[data-show="overdue"]').click()
        await expect(page.locator(".task")).to_have_count(1)
        assert await shown_ids(page) == [made["review"]]
        await expect(page).to_have_url(re.compile(r"#/\?show=overdue$"))
        await page.locator('.show[data-show="mine"]').click()
        await expect(page.locator(".task")).to_have_count(1)
        assert await shown_ids(page) == [made["big"]]
        await page.go_back()  # each filter is a step in the history
        await expect(page).to_have_url(re.compile(r"#/\?show=overdue$"))
        await page.locator('.show[data-show="all"]').click()

        # By target: the counts of the other filters follow it.
        await page.get_by_label("Target").select_option(made["payouts"]["id"])
        await expect(page.locator(".task")).to_have_count(1)
        assert await shown_ids(page) == [made["payout"]]
        await expect_counts(page, {"all": 1, "unclaimed": 1, "mine": 0, "overdue": 0})
        await page.get_by_label("Target").select_option("")

        # Search: the subject, then the payload's text.
        search = page.get_by_label("Search subject and payload")
        await search.fill("ada love")
        await expect(page.locator(".task")).to_have_count(1)
        assert await shown_ids(page) == [made["payout"]]
        await expect_counts(page, {"all": 1, "unclaimed": 1, "mine": 0, "overdue": 0})
        await search.fill("usd")
        await expect(page.locator(".task")).to_have_count(1)
        assert await shown_ids(page) == [made["small"]]
        await expect(search).to_be_focused()
        await search.fill("")
        await expect(page.locator(".task")).to_have_count(4)

        # Sort by amount: largest first, the task without one last.
        await page.get_by_label("Sort by").select_option("amount")
        await expect(page.locator(".task").first).to_have_attribute("data-task-id", made["big"])
        assert await shown_ids(page) == [made["big"], made["payout"], made["small"], made["review"]]
        await page.get_by_label("Sort by").select_option("age")
        await expect(page.locator(".task").first).to_have_attribute("data-task-id", made["big"])
        assert (await shown_ids(page))[-1] == made["review"]

        # The address holds it all: another reviewer's tab opens the same list.
        await page.get_by_label("Sort by").select_option("amount")
        await search.fill("o-")
        await expect(page.locator(".task")).to_have_count(2)
        link = page.url
        assert "sort=amount" in link and "q=o-" in link, link
        other, their_page, their_errors = await signed_in(browser, server, world.reviewers[1])
        try:
            await their_page.goto(link)
            await expect(their_page.locator(".task")).to_have_count(2)
            assert await shown_ids(their_page) == [made["big"], made["small"]]
            await expect(their_page.get_by_label("Search subject and payload")).to_have_value("o-")
            await expect(their_page.get_by_label("Sort by")).to_have_value("amount")
            await expect_counts(their_page, {"all": 2, "unclaimed": 1, "mine": 0})
            assert their_errors == []
        finally:
            await other.close()
        assert errors == []
    finally:
        await context.close()


async def test_a_long_list_is_read_whole_drawn_fifty_rows_at_a_time_and_followed_live(
    browser: Browser, module_server: ModuleServer
) -> None:
    """More tasks than a page: every one is read (the heading and the counts say 130), 50
    rows are drawn and 50 more on request, and the feed followed from before the pages
    were read brings a task made afterwards."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1, reviewer_names=unique_name("long"))
        await create_tasks(gql, world.admin, world.queue_id, 130, label="long")
        context, page, errors = await signed_in(browser, server, world.reviewers[0])
        try:
            await expect(page.locator("#tasks-title .count")).to_have_text(" (130)")
            await expect(page.locator("#loading-more")).to_have_count(0)
            await expect(page.locator(".task")).to_have_count(50)
            await expect_counts(page, {"all": 130, "unclaimed": 130})
            await page.get_by_role("button", name="Show 50 more of 80").click()
            await expect(page.locator(".task")).to_have_count(100)
            await create_tasks(gql, world.admin, world.queue_id, 1, label="late")
            await expect(page.locator("#tasks-title .count")).to_have_text(" (131)")
            assert errors == []
        finally:
            await context.close()
