"""The console's Admin screens in a real Chromium against a real ``signoff serve``, at a
phone's width: an admin adds a queue member, pauses and resumes a target (and is told in
words why a pause someone else made first is refused), creates a token shown once and
revokes it, adds, disables and removes a notification channel, and reads the
delegations and the sign-in mapping; each change checked through the API. Someone who is
not an admin has no Admin section, and the screens tell them whose they are. The
``console-admin-*`` screenshots are taken here (``SIGNOFF_UPDATE_SCREENSHOTS=1``), each screen
checked by axe-core first.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page, expect

from signoff.database import SessionMaker
from signoff.models import Role
from tests.browser import axe_violations, screenshot_path
from tests.conftest import checked_once
from tests.helpers import GraphQLClient, World, build_world
from tests.live import http_gql
from tests.test_console import LIVE_WITHIN, PHONE, Serve, signed_in

pytestmark = checked_once

VIEWER = "{ viewer { actor { name role } queues { id } } }"
TARGET = "query($id: ID!) { target(id: $id) { pausedAt } }"
CHANNELS = """query($id: ID!) {
  queue(id: $id) { notificationChannels(removed: true) { kind url disabled removedAt } }
}"""
ACTOR = "query($n: String!) { actors(name: $n) { nodes { id } } }"


async def actor_id(gql: GraphQLClient, admin: str, name: str) -> str:
    found: str = (await gql(ACTOR, {"n": name}, admin))["actors"]["nodes"][0]["id"]
    return found


async def open_screen(page: Page, title: str) -> None:
    await page.get_by_role("link", name=title, exact=True).click()
    await expect(page.locator(".work h2")).to_have_text(title)


async def no_violations(page: Page, screen: str) -> None:
    """axe-core finds no serious or critical violation on the screen as it is now."""
    found = await axe_violations(page)
    assert found == [], f"{screen}: {found}"


async def expect_notice(page: Page, text: str) -> None:
    await expect(page.locator("#notice")).to_have_text(text, timeout=LIVE_WITHIN)


async def test_an_admin_works_each_admin_screen(
    browser: Browser, serve: Serve, sessionmaker: SessionMaker, tmp_path: Path
) -> None:
    server = await serve()
    shots = tmp_path / "shots"
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=2)
        await gql.token(Role.REVIEWER, name="newcomer")
        away = {"delegateId": await actor_id(gql, world.admin, "reviewer-1")}
        away["endsAt"] = (datetime.now(UTC) + timedelta(days=3)).isoformat()
        await gql(
            "mutation($i: SetDelegateInput!) { setDelegate(input: $i) { id } }",
            {"i": away},
            world.reviewers[0],
        )
        context, page, errors = await signed_in(browser, server, world.admin, viewport=PHONE)
        try:
            await _queues(page, gql, world, shots)
            await _targets(page, gql, world, shots)
            await _tokens(page, gql, shots)
            await _channels(page, gql, world, shots)
            await open_screen(page, "Delegations")
            row = page.locator("[data-delegation-id]")
            await expect(row).to_contain_text("reviewer-0")
            await expect(row).to_contain_text("reviewer-1")
            await no_violations(page, "delegations")
            await page.screenshot(path=screenshot_path("console-admin-delegations", shots))
            await open_screen(page, "Sign-in mapping")
            await expect(page.locator(".work")).to_contain_text(
                "Sign-in with an identity provider is not set up on this server"
            )
            assert errors == []
        finally:
            await context.close()


async def _queues(page: Page, gql: GraphQLClient, world: World, shots: Path) -> None:
    await open_screen(page, "Queues and members")
    item = page.locator(f'[data-queue-id="{world.queue_id}"]')
    await expect(item.locator(".members li")).to_have_count(2)
    await item.get_by_label("Add a reviewer").select_option(label="newcomer")
    await item.get_by_role("button", name="Add", exact=True).click()
    await expect_notice(page, "newcomer now reviews Payments.")
    await expect(item.locator(".members li")).to_have_count(3)
    await no_violations(page, "queues")
    await page.screenshot(path=screenshot_path("console-admin-queues", shots), full_page=True)
    viewer = (await gql(VIEWER, token=await gql.token(Role.REVIEWER, name="newcomer")))["viewer"]
    assert viewer["queues"] == [{"id": world.queue_id}]
    await item.get_by_role("button", name="Remove newcomer from Payments").click()
    await expect_notice(page, "newcomer no longer reviews Payments.")
    await expect(item.locator(".members li")).to_have_count(2)
    await page.get_by_label("Slug").fill("refunds-eu")
    await page.get_by_label("Name", exact=True).fill("Refunds EU")
    await page.get_by_role("button", name="Create queue").click()
    await expect_notice(page, "Queue Refunds EU created.")
    await expect(page.locator(".admin-item h3")).to_have_count(2)
    # The navigation offers the new queue at once, without a reload.
    await expect(page.locator("nav.queues").get_by_role("link", name="Refunds EU")).to_be_visible()
    slugs = (await gql("{ queues { slug } }", token=world.admin))["queues"]
    assert {"slug": "refunds-eu"} in slugs


async def _targets(page: Page, gql: GraphQLClient, world: World, shots: Path) -> None:
    await open_screen(page, "Targets")
    item = page.locator(f'[data-target-id="{world.target_id}"]')
    await item.get_by_label("Reason to pause").fill("receiver maintenance")
    await item.get_by_role("button", name="Pause").click()
    await expect_notice(page, f"{await _target_name(gql, world)} is paused: its proposals wait.")
    await expect(item.locator(".badge-paused")).to_have_text("Paused")
    assert (await gql(TARGET, {"id": world.target_id}, world.admin))["target"]["pausedAt"]
    await no_violations(page, "targets")
    await page.screenshot(path=screenshot_path("console-admin-targets", shots), full_page=True)
    await item.get_by_role("button", name="Resume").click()
    await expect(item.locator(".badge-delivering")).to_have_text("Delivering")
    assert (await gql(TARGET, {"id": world.target_id}, world.admin))["target"]["pausedAt"] is None

    # Someone else pauses it while this page still offers Pause: the refusal in words, and
    # the target drawn as the server has it.
    pause = {"targetId": world.target_id, "reason": "by the API"}
    await gql(
        "mutation($i: PauseTargetInput!) { pauseTarget(input: $i) { replayed } }",
        {"i": pause},
        world.admin,
    )
    await item.get_by_label("Reason to pause").fill("again")
    await item.get_by_role("button", name="Pause").click()
    await expect_notice(page, "The target is already paused. (TARGET_ALREADY_PAUSED)")
    await expect(item.locator(".badge-paused")).to_have_text("Paused")
    await expect(item.get_by_role("button", name="Resume")).to_be_visible()


async def _target_name(gql: GraphQLClient, world: World) -> str:
    found = await gql(
        "query($id: ID!) { target(id: $id) { name } }", {"id": world.target_id}, world.admin
    )
    name: str = found["target"]["name"]
    return name


async def _tokens(page: Page, gql: GraphQLClient, shots: Path) -> None:
    await open_screen(page, "API tokens")
    # An existing actor keeps its role: asked for another, nothing is made.
    await page.get_by_label("Actor's name").fill("newcomer")
    await page.get_by_label("Role").select_option("ADMIN")
    await page.get_by_role("button", name="Create token").click()
    await expect_notice(
        page,
        "That actor already has another role; nothing was changed. An existing actor keeps "
        "its role (signoff actor set-role changes it). (ROLE_CONFLICT)",
    )
    await expect(page.locator(".secret")).to_have_count(0)
    await page.get_by_label("Actor's name").fill("ci-bot")
    await page.get_by_label("Role").select_option("AGENT")
    await page.get_by_role("button", name="Create token").click()
    await expect_notice(page, "Token created. Copy it now: it is not shown again.")
    token = (await page.locator(".secret code").text_content() or "").strip()
    viewer = (await gql(VIEWER, token=token))["viewer"]
    assert viewer["actor"] == {"name": "ci-bot", "role": "AGENT"}
    await no_violations(page, "tokens")
    await page.screenshot(path=screenshot_path("console-admin-tokens", shots), full_page=True)

    # Shown once: gone once the reader leaves the screen and comes back.
    await open_screen(page, "Targets")
    await open_screen(page, "API tokens")
    await expect(page.locator(".secret")).to_have_count(0)
    assert token not in (await page.content())
    await page.get_by_role("button", name="Revoke a token of ci-bot").click()
    await expect_notice(page, "The token of ci-bot is revoked.")
    await expect(page.get_by_role("button", name="Revoke a token of ci-bot")).to_have_count(0)
    assert (await gql.error(VIEWER, token=token)).code == "UNAUTHENTICATED"


async def _channels(page: Page, gql: GraphQLClient, world: World, shots: Path) -> None:
    await open_screen(page, "Notification channels")
    await page.get_by_label("URL").fill("http://127.0.0.1:9/notify")
    await page.get_by_role("button", name="Add channel").click()
    await expect_notice(page, "Channel added to Payments.")
    await expect(page.locator(".shown-once")).to_contain_text("signing secret")
    item = page.locator("[data-channel-id]")
    await expect(item).to_have_count(1)
    await item.get_by_role("button", name="Disable").click()
    await expect(item.locator(".badge-disabled")).to_have_text("Disabled")
    await no_violations(page, "channels")
    await page.screenshot(path=screenshot_path("console-admin-channels", shots), full_page=True)
    channels = await _channels_of(gql, world)
    assert [(c["url"], c["disabled"]) for c in channels] == [("http://127.0.0.1:9/notify", True)]

    # Removed meanwhile through the API: Remove is refused in words, and the list follows.
    channel_id = await item.get_attribute("data-channel-id")
    await gql(
        "mutation($id: ID!) { removeNotificationChannel(input: {channelId: $id}) { id } }",
        {"id": channel_id},
        world.admin,
    )
    await item.get_by_role("button", name="Remove").click()
    await expect_notice(
        page,
        "This notification channel was removed; add a new one to the queue instead. "
        "(NOTIFICATION_CHANNEL_REMOVED)",
    )
    await expect(page.locator("[data-channel-id]")).to_have_count(0)
    assert (await _channels_of(gql, world))[0]["removedAt"] is not None

    # A mail channel for one reviewer of the queue, with how long its approval links last.
    await page.get_by_label("Kind").select_option(label="Email to one reviewer")
    await page.get_by_label("Mail address").fill("reviewer@example.com")
    await page.get_by_label("Reviewer it mails (their approval links)").select_option(index=0)
    await page.get_by_label("Approval links valid for (hours)").fill("2")
    await page.get_by_role("button", name="Add channel").click()
    await expect_notice(page, "Channel added to Payments.")
    await expect(page.locator("[data-channel-id]")).to_have_count(1)
    added = [c for c in await _channels_of(gql, world) if c["removedAt"] is None]
    assert [(c["kind"], c["url"]) for c in added] == [("EMAIL", "mailto:reviewer@example.com")]

    # This server has no Slack app: a Slack app channel is refused in words, nothing added.
    await page.get_by_label("Kind").select_option(label="Slack app (Approve and Reject in Slack)")
    await page.get_by_label("Slack channel id (C…)").fill("C0123456789")
    await page.get_by_role("button", name="Add channel").click()
    await expect_notice(
        page, "The Slack app is not configured: set SIGNOFF_SLACK_BOT_TOKEN. (VALIDATION_FAILED)"
    )
    assert len([c for c in await _channels_of(gql, world) if c["removedAt"] is None]) == 1


async def _channels_of(gql: GraphQLClient, world: World) -> list[dict[str, Any]]:
    found = await gql(CHANNELS, {"id": world.queue_id}, world.admin)
    channels: list[dict[str, Any]] = found["queue"]["notificationChannels"]
    return channels


MAPPING = """\
groups-claim roles
signoff-admins admin
signoff-payments reviewer payments refunds
"""


async def test_an_admin_reads_the_sign_in_mapping(
    browser: Browser, serve: Serve, sessionmaker: SessionMaker, tmp_path: Path
) -> None:
    """The mapping the server started with, line by line, a queue it names that does not
    exist pointed out. The provider is never asked: the admin signs in with a token."""
    claims = tmp_path / "claims.txt"
    claims.write_text(MAPPING)
    server = await serve(
        SIGNOFF_OIDC_ISSUER="http://127.0.0.1:9/idp",
        SIGNOFF_OIDC_CLIENT_ID="signoff",
        SIGNOFF_OIDC_CLAIMS_FILE=str(claims),
        SIGNOFF_CONSOLE_TOKEN_SIGN_IN="1",
    )
    async with http_gql(server, sessionmaker) as gql:
        admin = await gql.token(Role.ADMIN, name="admin")
        made = {"input": {"slug": "payments", "name": "Payments"}}
        await gql(
            "mutation($input: CreateQueueInput!) { createQueue(input: $input) { id } }", made, admin
        )
    context, page, errors = await signed_in(browser, server, admin, viewport=PHONE)
    try:
        await open_screen(page, "Sign-in mapping")
        rows = page.locator(".work tbody tr")
        await expect(rows).to_have_count(2)
        await expect(rows.nth(0)).to_contain_text("signoff-admins")
        await expect(rows.nth(0)).to_contain_text("admin")
        await expect(rows.nth(1)).to_contain_text("payments")
        await expect(rows.nth(1).locator(".missing")).to_have_text("(no such queue)")
        await expect(rows.nth(1)).to_contain_text("refunds (no such queue)")
        await expect(page.locator(".facts")).to_contain_text("roles")
        await no_violations(page, "sign-in mapping")
        shot = screenshot_path("console-admin-sign-in", tmp_path / "shots")
        await page.screenshot(path=shot, full_page=True)
        assert errors == []
    finally:
        await context.close()


async def test_only_admins_see_the_admin_section(
    browser: Browser, serve: Serve, sessionmaker: SessionMaker
) -> None:
    """An operator (who sees Operations) and a reviewer have no Admin links; opening an
    Admin screen's address anyway says whose it is, with nothing to press or read."""
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1)
        operator = await gql.token(Role.OPERATOR, name="ops")
    for token in (operator, world.reviewers[0]):
        context, page, errors = await signed_in(browser, server, token)
        try:
            await expect(page.locator(".queues h2")).to_have_count(1)
            await expect(page.get_by_role("link", name="API tokens")).to_have_count(0)
            await expect(page.get_by_text("Admin", exact=True)).to_have_count(0)
            await page.goto(server.url + "/#/admin/tokens")
            await expect(page.locator(".work")).to_contain_text(
                "The Admin screens are for admins.", timeout=LIVE_WITHIN
            )
            await expect(page.locator("main button")).to_have_count(0)
            await expect(page.locator("table")).to_have_count(0)
            assert errors == []
        finally:
            await context.close()
