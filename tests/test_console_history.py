"""Issue 43, items 3 and 4, in a real Chromium against a real ``signoff serve``: the History
view filters decided proposals (the filters in the address, so a link opens the same list)
and opens a proposal's page; that page tells the proposal's story in order, from its audit
records (proposed under a policy rule, amended with its diff, each reviewer's decision with
its digest, the quorum) and offers its decision receipt with how to verify it. The
``console-history`` and ``console-proposal-timeline`` screenshots (phone width) are taken
here (``SIGNOFF_UPDATE_SCREENSHOTS=1``)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page, expect

from tests.browser import screenshot_path
from tests.conftest import ModuleServer, checked_once
from tests.helpers import World, build_world, unique_name
from tests.live import http_gql
from tests.processes import run_cli, signoff_env
from tests.test_console import LIVE_WITHIN, PHONE, signed_in

pytestmark = checked_once

AMEND = """
mutation($input: AmendProposalInput!) {
  amendProposal(input: $input) { proposal { id payloadDigest } }
}
"""

BEGIN = """
mutation($input: BeginExecutionInput!) { beginExecution(input: $input) { lease } }
"""

POLICY = {
    "rules": [
        {
            "name": "large refunds",
            "when": {"properties": {"amount": {"minimum": 1000}}, "required": ["amount"]},
            "approvals": 2,
        }
    ],
    "default": {"approvals": 1},
}


async def _proposal(world: World, customer: str, amount: int = 100) -> dict[str, Any]:
    proposed = await world.propose(
        {"amount": amount, "currency": "EUR"},
        subject={"order": unique_name("o"), "customer": customer},
    )
    proposal: dict[str, Any] = proposed["proposal"]
    return proposal


async def _rows(page: Page) -> list[str]:
    rows: list[str] = await page.locator(".history-row").evaluate_all(
        "rows => rows.map(row => row.dataset.proposalId)"
    )
    return rows


async def test_history_filters_in_the_address_and_opens_a_proposal(
    browser: Browser, module_server: ModuleServer, tmp_path: Path
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewer_names=unique_name("history"))
        acme = await _proposal(world, "ACME Corp")
        globex = await _proposal(world, "Globex")
        waiting = await _proposal(world, "ACME Waiting")
        await world.decide(world.reviewers[0], acme)
        await world.decide(world.reviewers[1], globex, decision="REJECTED", reason="Wrong order.")
    context, page, errors = await signed_in(browser, server, world.reviewers[0], PHONE)
    try:
        await page.get_by_role("link", name="History").click()
        await expect(page.locator(".history-row")).to_have_count(2)
        assert await _rows(page) == [globex["id"], acme["id"]]
        assert waiting["id"] not in await _rows(page)
        await expect(page.locator(f'[data-proposal-id="{globex["id"]}"]')).to_contain_text(
            "decided by"
        )

        await page.get_by_label("Outcome").select_option(label="Rejected")
        await expect(page).to_have_url(f"{server.url}/#/history?state=rejected")
        await expect(page.locator(".history-row")).to_have_count(1)
        assert await _rows(page) == [globex["id"]]

        await page.get_by_label("Outcome").select_option(label="Any")
        await page.get_by_label("Subject contains").fill("acme")
        await page.get_by_label("Subject contains").press("Enter")
        await expect(page).to_have_url(f"{server.url}/#/history?q=acme")
        await expect(page.locator(".history-row")).to_have_count(1)
        assert await _rows(page) == [acme["id"]]
        await expect(page.locator("main .loading")).to_have_count(0)
        await page.screenshot(path=screenshot_path("console-history", tmp_path), full_page=True)
        fits = "() => document.documentElement.scrollWidth <= window.innerWidth"
        assert await page.evaluate(fits), "the history scrolls sideways at phone width"

        # A shared link opens the same list, its filters filled in.
        shared, other, other_errors = await signed_in(browser, server, world.reviewers[1])
        try:
            await other.goto(f"{server.url}/#/history?q=acme&reviewer=")
            await expect(other.locator(".history-row")).to_have_count(1)
            await expect(other.get_by_label("Subject contains")).to_have_value("acme")
            assert other_errors == []
        finally:
            await shared.close()

        # Days are the reader's own: from tomorrow finds nothing, from today finds it.
        today = datetime.now().date()
        await page.get_by_label("Decided from").fill((today + timedelta(days=1)).isoformat())
        await expect(page.locator("#history-empty")).to_have_text("No decided proposal matches.")
        await page.get_by_label("Decided from").fill(today.isoformat())
        await expect(page).to_have_url(f"{server.url}/#/history?from={today.isoformat()}&q=acme")
        await expect(page.locator(".history-row")).to_have_count(1)

        await page.locator(".history-link").first.click()
        await expect(page).to_have_url(f"{server.url}/#/proposal/{acme['id']}")
        await expect(page.locator("main h2")).to_contain_text("refund.create on refunds-")
        await expect(page.locator(".facts")).to_contain_text(acme["payloadDigest"])
        assert errors == []
    finally:
        await context.close()


async def test_a_proposal_page_tells_its_story_and_offers_its_receipt(
    browser: Browser, module_server: ModuleServer, tmp_path: Path
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    names = unique_name("story")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=3, reviewer_names=names, approvalPolicy=POLICY)
        proposed = await world.propose(
            {"amount": 5000, "currency": "EUR"}, subject={"customer": "ACME Corp"}
        )
        proposal, task = proposed["proposal"], proposed["task"]
        given = {
            "proposalId": proposal["id"],
            "basedOnDigest": proposal["payloadDigest"],
            "reason": "The order was partly refunded.",
            "patch": {"amount": 4500},
        }
        amended = (await gql(AMEND, {"input": given}, world.reviewers[0]))["amendProposal"][
            "proposal"
        ]
        await world.decide(world.reviewers[1], amended, reason="Matches the order.")
        await world.decide(world.reviewers[2], amended)
    context, page, errors = await signed_in(browser, server, world.reviewers[1], PHONE)
    try:
        # The task page's proposal leads to its story.
        await page.goto(f"{server.url}/#/task/{task['id']}")
        await page.get_by_role("link", name="its timeline and receipt").click()
        await expect(page).to_have_url(f"{server.url}/#/proposal/{proposal['id']}")
        entries = page.locator(".timeline-entry")
        await expect(entries).to_have_count(5)
        actions = await entries.evaluate_all("items => items.map(item => item.dataset.action)")
        assert actions == [
            "proposal.proposed",
            "proposal.amended",
            "approval.approved",
            "approval.approved",
            "proposal.approved",
        ]
        proposed, amendment, first, second, quorum = [entries.nth(i) for i in range(5)]
        await expect(proposed).to_contain_text("agent proposed it")
        await expect(proposed).to_contain_text(
            "Needs 2 approvals in Payments, set by policy rule 0 “large refunds”."
        )
        await expect(proposed).to_contain_text(proposal["payloadDigest"])
        await expect(amendment).to_contain_text(f"{names}-0 amended it")
        await expect(amendment).to_contain_text(
            f"Revision 2: {proposal['payloadDigest']} → {amended['payloadDigest']}"
        )
        await expect(amendment.locator(".timeline-diff")).to_have_text("replace /amount → 4500")
        await expect(amendment).to_contain_text("“The order was partly refunded.”")
        await expect(first).to_contain_text(f"{names}-1 approved")
        await expect(first).to_contain_text(f"Digest {amended['payloadDigest']} (revision 2)")
        await expect(first).to_contain_text("“Matches the order.”")
        await expect(second).to_contain_text(f"{names}-2 approved")
        await expect(second).to_contain_text(amended["payloadDigest"])
        await expect(quorum).to_contain_text(f"Approved: the quorum was reached · {names}-2")

        receipt_file = f"receipt-{proposal['id']}.json"
        await expect(page.locator("#receipt")).to_contain_text(
            f"signoff audit verify-receipt {receipt_file} --public-key audit.pub"
        )
        await expect(page.locator("#receipt")).to_contain_text(
            f"curl -s {server.url}/.well-known/signoff-audit-key > audit.pub"
        )
        async with page.expect_download() as waiting:
            await page.get_by_role("button", name=f"Save {receipt_file}").click()
        download = await waiting.value
        assert download.suggested_filename == receipt_file
        saved = json.loads(await asyncio.to_thread((await download.path()).read_text))
        assert saved["proposal"]["id"] == proposal["id"]
        assert saved["proposal"]["digest"] == amended["payloadDigest"]
        assert [a["digest"] for a in saved["approvals"]] == [amended["payloadDigest"]] * 2
        await page.screenshot(
            path=screenshot_path("console-proposal-timeline", tmp_path), full_page=True
        )
        fits = "() => document.documentElement.scrollWidth <= window.innerWidth"
        assert await page.evaluate(fits), "the proposal page scrolls sideways at phone width"
        assert errors == []
    finally:
        await context.close()


async def test_the_receipt_hint_verifies_the_saved_receipt(
    browser: Browser, module_server: ModuleServer, tmp_path: Path
) -> None:
    """Past a signed checkpoint, the page's two commands, run as printed where the receipt
    was saved, verify it offline; what happens next joins the timeline live."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    env = signoff_env(module_server.database_url)
    async with http_gql(server, sessionmaker) as gql:
        # A target its agent executes: nothing is delivered after the checkpoint.
        world = await build_world(gql, url=None, reviewer_names=unique_name("receipt"))
        proposal = await _proposal(world, "ACME Corp")
        await world.decide(world.reviewers[0], proposal)
    signed = await asyncio.to_thread(run_cli, "audit", "checkpoint", env=env)
    assert signed.returncode == 0, signed.stderr
    context, page, errors = await signed_in(browser, server, world.reviewers[0])
    try:
        await page.goto(f"{server.url}/#/proposal/{proposal['id']}")
        await expect(page.locator("#receipt-summary")).to_contain_text(
            f"3 audit records proven against the checkpoint of {json.loads(signed.stdout)['size']}"
        )
        receipt_file = f"receipt-{proposal['id']}.json"
        async with page.expect_download() as waiting:
            await page.get_by_role("button", name=f"Save {receipt_file}").click()
        await (await waiting.value).save_as(tmp_path / receipt_file)
        commands = await page.locator("#receipt pre").inner_text()
        path = f"{Path(sys.executable).parent}:{env['PATH']}"
        for command in commands.splitlines():
            ran = await asyncio.to_thread(
                subprocess.run,
                ["bash", "-c", command],
                env={**env, "PATH": path},
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert ran.returncode == 0, f"{command}\n{ran.stdout}{ran.stderr}"
        assert ran.stdout.startswith("OK: 3 records"), ran.stdout

        # The story goes on live: the agent takes the execution, the page tells it.
        async with http_gql(server, sessionmaker) as gql:
            given = {"proposalId": proposal["id"], "payloadDigest": proposal["payloadDigest"]}
            await gql(BEGIN, {"input": given}, world.agent)
        await expect(page.locator('[data-action="proposal.execution_started"]')).to_contain_text(
            "agent began executing it", timeout=LIVE_WITHIN
        )
        await expect(page.locator(".timeline-entry")).to_have_count(4)
        assert errors == []
    finally:
        await context.close()
