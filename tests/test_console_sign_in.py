"""Signing in to the console through the company's identity provider, in a real Chromium
against a real ``signoff serve`` and a real OpenID provider (``tests/oidc``).

Reviewers sign in on the provider's own login page and see only the queues their groups
map to; they claim and approve; signing out ends the session and offers the provider's
sign-out. The browser holds only an ``HttpOnly``, ``SameSite=Strict`` cookie; a replayed
code, a state or PKCE mismatch, a cross-site POST without the CSRF token and a websocket
from another origin are refused; a reviewer removed from the group is signed out, live
subscriptions included, at the session's next refresh.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest
from playwright.async_api import Browser, BrowserContext, Page, expect
from sqlalchemy import func
from sqlmodel import select
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from signoff.config import Settings, load_sealer
from signoff.constants import CONSOLE_SESSION_COOKIE, CONSOLE_SIGN_IN_COOKIE
from signoff.database import SessionMaker
from signoff.models import Approval, AuditEvent, ConsoleSession, Role
from tests.browser import console_errors, offline_context, screenshot_path
from tests.conftest import checked_once
from tests.helpers import (
    CREATE_QUEUE,
    DECIDE,
    PAYMENT_SCHEMA,
    PROPOSE,
    REGISTER_TARGET,
    GraphQLClient,
)
from tests.live import TRANSPORT_WS, Server, http_gql, server_log_on_failure
from tests.oidc.provider import TestProvider
from tests.processes import free_port

pytestmark = checked_once

Serve = Callable[..., Awaitable[Server]]
LIVE_WITHIN = 15_000  # ms
PROVIDER_BUTTON = "Sign in with your company account"


@dataclass
class Scene:
    server: Server
    provider: TestProvider
    gql: GraphQLClient
    admin: str
    proposal: dict[str, Any]
    task_id: str


@pytest.fixture
async def scene(
    serve: Serve, sessionmaker: SessionMaker, tmp_path: Path
) -> AsyncIterator[Callable[..., Awaitable[Scene]]]:
    """Start the provider and a server signing in there (``env`` over its settings),
    with ``queues`` (``payments`` and ``refunds``) and a proposal waiting in ``payments``."""
    providers: list[TestProvider] = []

    async def make(queues: tuple[str, ...] = ("payments", "refunds"), **env: str) -> Scene:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        provider = TestProvider(
            tmp_path / "idp", redirect_uri=f"{base}/auth/callback", post_logout_uri=f"{base}/"
        )
        provider.start()
        providers.append(provider)
        server = await serve(
            SIGNOFF_PORT=str(port),
            SIGNOFF_EVENTS_AUTH_REFRESH_SECONDS="1",
            **provider.env(),
            **env,
        )
        async with http_gql(server, sessionmaker) as gql:
            admin = await gql.token(Role.ADMIN, name="admin")
            made_queues = {}
            for slug in queues:
                made = await gql(CREATE_QUEUE, {"input": {"slug": slug, "name": slug}}, admin)
                made_queues[slug] = made["createQueue"]["id"]
            target = {
                "name": "refunds-api",
                "url": "http://127.0.0.1:9/hook",
                "inputSchema": PAYMENT_SCHEMA,
                "approvalMode": "HUMAN",
                "queueId": made_queues["payments"],
                "requiredApprovals": 1,
            }
            registered = await gql(REGISTER_TARGET, {"input": target}, admin)
            agent = await gql.token(Role.AGENT, name="agent")
            proposed = await gql(
                PROPOSE,
                {
                    "input": {
                        "targetId": registered["registerTarget"]["target"]["id"],
                        "actionCode": "refund.create",
                        "subject": {"order": "o-1"},
                        "payload": {"amount": 4200, "currency": "EUR"},
                        "operationKey": uuid.uuid4().hex,
                    }
                },
                agent,
            )
        made = proposed["proposeAction"]
        return Scene(server, provider, gql, admin, made["proposal"], made["task"]["id"])

    yield make
    for provider in providers:
        provider.stop()


async def sign_in(page: Page, server: Server, who: str) -> None:
    """Through the provider's own login page (any password: its development login)."""
    await page.goto(server.url + "/")
    await page.get_by_role("link", name=PROVIDER_BUTTON).click()
    await page.locator("input[name=login]").fill(who)
    await page.locator("input[name=password]").fill("whatever")
    await page.get_by_role("button", name="Sign-in").click()
    await expect(page.locator("#live")).to_have_text("Live", timeout=LIVE_WITHIN)


async def _session_cookie(context: BrowserContext) -> dict[str, Any]:
    cookies = {c["name"]: c for c in await context.cookies()}
    cookie: dict[str, Any] = dict(cookies[CONSOLE_SESSION_COOKIE])
    return cookie


async def test_reviewers_sign_in_at_the_provider_and_see_only_their_queues(
    browser: Browser, scene: Callable[..., Awaitable[Scene]], sessionmaker: SessionMaker
) -> None:
    world = await scene()
    server = world.server
    with server_log_on_failure(server):
        context = await offline_context(browser, viewport={"width": 1200, "height": 800})
        page = await context.new_page()
        errors = console_errors(page)
        await page.goto(server.url + "/")
        await expect(page.get_by_role("link", name=PROVIDER_BUTTON)).to_be_visible()
        # With a provider, pasting a token is off unless SIGNOFF_CONSOLE_TOKEN_SIGN_IN allows it.
        await expect(page.get_by_label("API token")).to_have_count(0)
        await page.screenshot(
            path=screenshot_path("console-sign-in-provider", world.provider.folder)
        )

        await sign_in(page, server, "alice")
        await expect(page.locator("#who")).to_have_text("Alice Ng (reviewer)")
        await expect(page.locator(".task-link")).to_contain_text("Approve refund.create")
        cookie = await _session_cookie(context)
        assert (cookie["httpOnly"], cookie["sameSite"]) == (True, "Strict")
        stored = await page.evaluate(
            "() => JSON.stringify([Object.keys(localStorage), Object.keys(sessionStorage)])"
        )
        assert json.loads(stored) == [[], []], "a token was kept in the browser's storage"

        await page.locator(".task-link").first.click()
        await page.get_by_role("button", name="Claim").click()
        await expect(page.locator(".facts")).to_contain_text("Claimed byyou")
        await page.get_by_role("button", name="Approve").click()
        await expect(page.locator("#approvals-title")).to_have_text(
            "Approvals: 1 of 1", timeout=LIVE_WITHIN
        )
        async with sessionmaker() as session:
            approvals = (await session.exec(select(func.count()).select_from(Approval))).one()
        assert approvals == 1

        # Bob reviews refunds: the payments proposal is not his to see.
        other = await offline_context(browser)
        bob = await other.new_page()
        await sign_in(bob, server, "bob")
        await expect(bob.locator("#who")).to_have_text("Bob Ruiz (reviewer)")
        await expect(bob.locator(".empty")).to_contain_text("Nothing waiting")
        await bob.goto(f"{server.url}/#/task/{world.task_id}")
        await expect(bob.locator("#notice")).to_contain_text("(FORBIDDEN)")

        # Signing out ends the session at Signoff and offers the provider's sign-out.
        await page.get_by_role("button", name="Sign out").click()
        link = page.get_by_role("link", name="Also sign out at your identity provider")
        await expect(link).to_be_visible()
        href = await link.get_attribute("href")
        assert href is not None and href.startswith(f"{world.provider.issuer}/session/end")
        assert parse_qs(urlsplit(href).query)["post_logout_redirect_uri"] == [f"{server.url}/"]
        assert CONSOLE_SESSION_COOKIE not in {c["name"] for c in await context.cookies()}
        # The old cookie's value is worth nothing now.
        async with httpx.AsyncClient(base_url=server.url) as http:
            http.cookies.set(CONSOLE_SESSION_COOKIE, cookie["value"])
            answer = await http.post(
                "/graphql",
                json={"query": "{ viewer { actor { name } } }"},
                headers=_csrf_headers(cookie["value"], server),
            )
        assert answer.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
        # The provider's development login page asks for a web font, which the offline
        # browser refuses; nothing else went outside this machine or failed.
        outside = context.outside  # type: ignore[attr-defined]
        assert all(url.startswith("https://fonts.googleapis.com/") for url in outside)
        assert [e for e in errors if e != "Failed to load resource: net::ERR_FAILED"] == []
        await context.close()
        await other.close()


def _csrf_headers(token: str, server: Server) -> dict[str, str]:
    from signoff.resolvers.access.sessions import csrf_of

    return {"x-csrf-token": csrf_of(token), "origin": server.url}


async def test_someone_in_no_mapped_group_is_told_so(
    browser: Browser, scene: Callable[..., Awaitable[Scene]]
) -> None:
    world = await scene()
    context = await offline_context(browser)
    page = await context.new_page()
    await page.goto(world.server.url + "/")
    await page.get_by_role("link", name=PROVIDER_BUTTON).click()
    await page.locator("input[name=login]").fill("eve")
    await page.locator("input[name=password]").fill("whatever")
    await page.get_by_role("button", name="Sign-in").click()
    await expect(page.locator("body")).to_contain_text("(NO_MAPPED_GROUP)")
    # Under the console's header, and the provider's one-time code and state are gone
    # from the address (issue 43, item 5).
    await expect(page.locator("header.bar")).to_contain_text("Signoff")
    await expect(page).to_have_url(f"{world.server.url}/auth/callback")
    assert "code=" not in await page.evaluate("() => JSON.stringify(history.state) + location.href")
    await context.close()


async def test_a_reviewer_whose_groups_map_to_no_queue_here_is_told_so(
    browser: Browser, scene: Callable[..., Awaitable[Scene]]
) -> None:
    """Issue 43, item 5: Bob's group maps to the ``refunds`` queue, which this Signoff does
    not have. He signs in as a reviewer of no queue and is told why no task will come,
    where a reviewer of an existing queue is not."""
    world = await scene(queues=("payments",))
    context = await offline_context(browser)
    page = await context.new_page()
    errors = console_errors(page)
    await sign_in(page, world.server, "bob")
    await expect(page.locator("#who")).to_have_text("Bob Ruiz (reviewer)")
    await expect(page.locator("#no-queue")).to_contain_text(
        "Your groups at the identity provider map you to no queue that exists in Signoff"
    )
    await expect(page.locator(".empty")).to_contain_text("Nothing waiting")
    # (The provider's login page asks for a web font, which the offline browser refuses.)
    assert [e for e in errors if e != "Failed to load resource: net::ERR_FAILED"] == []
    await context.close()
    context = await offline_context(browser)
    page = await context.new_page()
    await sign_in(page, world.server, "alice")
    await expect(page.locator(".task-link")).to_contain_text("Approve refund.create")
    await expect(page.locator("#no-queue")).to_have_count(0)
    await context.close()


async def _captured_callback(world: Scene) -> tuple[str, str]:
    """Sign in as Alice at the provider up to its redirect back: the callback URL (with
    its code and state) and the sign-in cookie, the callback itself not yet sent. Over
    HTTP, not in the browser: Chromium follows the redirect before a test could hold it."""
    server = world.server.url
    async with httpx.AsyncClient() as http:
        started = await http.get(f"{server}/auth/sign-in")
        cookie = started.cookies[CONSOLE_SIGN_IN_COOKIE]
        url = started.headers["location"]
        while not url.startswith(f"{server}/auth/callback"):
            answer = await http.get(url)
            form = re.search(r'<form[^>]*action="([^"]+)"', answer.text)
            if answer.status_code == 200 and form and 'name="login"' in answer.text:
                login = {"prompt": "login", "login": "alice", "password": "whatever"}
                answer = await http.post(urljoin(url, form.group(1)), data=login)
            assert answer.status_code in {302, 303}, answer.text[:500]
            url = urljoin(url, answer.headers["location"])
    return url, cookie


async def _callback(url: str, cookie: str | None) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        if cookie:
            http.cookies.set(CONSOLE_SIGN_IN_COOKIE, cookie)
        return await http.get(url)


async def _sessions(sessionmaker: SessionMaker) -> int:
    async with sessionmaker() as session:
        return (await session.exec(select(func.count()).select_from(ConsoleSession))).one()


async def test_a_replayed_code_and_a_state_or_pkce_mismatch_are_refused(
    scene: Callable[..., Awaitable[Scene]],
    sessionmaker: SessionMaker,
    settings: Settings,
) -> None:
    world = await scene()
    url, cookie = await _captured_callback(world)
    sealer = load_sealer(settings)
    pending = json.loads(sealer.open(cookie.strip('"')))

    # The state in the URL is not the one this browser's sign-in started with.
    other_state = sealer.seal(json.dumps({**pending, "state": "someone-elses"}))
    refused = await _callback(url, other_state)
    assert (refused.status_code, "(SIGN_IN_REFUSED)" in refused.text) == (400, True)
    # No sign-in under way in this browser (the cookie is gone, or never was).
    refused = await _callback(url, None)
    assert (refused.status_code, "No sign-in is under way" in refused.text) == (400, True)
    # Right state, wrong PKCE verifier: the provider refuses the code.
    wrong_verifier = sealer.seal(json.dumps({**pending, "verifier": "x" * 64}))
    refused = await _callback(url, wrong_verifier)
    assert (refused.status_code, "invalid_grant" in refused.text) == (400, True)
    assert await _sessions(sessionmaker) == 0

    # oidc-provider revokes a code once a wrong verifier was tried with it: start again.
    url, cookie = await _captured_callback(world)
    accepted = await _callback(url, cookie)
    assert accepted.status_code == 303 and accepted.headers["location"] == "/"
    assert CONSOLE_SESSION_COOKIE in accepted.cookies
    assert await _sessions(sessionmaker) == 1
    # The same code again, with the same sign-in cookie: used once, refused now.
    replayed = await _callback(url, cookie)
    assert (replayed.status_code, "invalid_grant" in replayed.text) == (400, True)
    assert await _sessions(sessionmaker) == 1


async def test_a_cross_site_request_and_a_foreign_websocket_are_refused(
    browser: Browser, scene: Callable[..., Awaitable[Scene]], sessionmaker: SessionMaker
) -> None:
    world = await scene()
    server = world.server
    context = await offline_context(browser)
    page = await context.new_page()
    await sign_in(page, server, "alice")
    token = (await _session_cookie(context))["value"]
    claim = {
        "query": "mutation($id: ID!) { claimTask(input: {taskId: $id}) { id state } }",
        "variables": {"id": world.task_id},
    }
    tasks = "{ tasks(first: 5) { nodes { id state } } }"
    async with httpx.AsyncClient(
        base_url=server.url, cookies={CONSOLE_SESSION_COOKIE: token}
    ) as http:
        # A form post from another site: the cookie alone, no CSRF token.
        answer = await http.post("/graphql", json=claim, headers={"origin": "https://evil.test"})
        assert answer.status_code == 403
        assert answer.json()["errors"][0]["extensions"]["code"] == "CSRF_REFUSED"
        # The right CSRF token (say, leaked) from another origin: refused all the same.
        headers = {**_csrf_headers(token, server), "origin": "https://evil.test"}
        answer = await http.post("/graphql", json=claim, headers=headers)
        assert answer.json()["errors"][0]["extensions"]["code"] == "CSRF_REFUSED"
        # From the console's own origin, with its token: the session works, and the
        # task the refused requests named is still unclaimed.
        own = await http.post(
            "/graphql", json={"query": tasks}, headers=_csrf_headers(token, server)
        )
        states = [t["state"] for t in own.json()["data"]["tasks"]["nodes"]]
        assert states == ["OPEN"], own.text

    cookie_header = {"Cookie": f"{CONSOLE_SESSION_COOKIE}={token}"}
    with pytest.raises(InvalidStatus) as foreign:
        await connect(
            server.ws_url,
            subprotocols=[TRANSPORT_WS],
            origin="https://evil.test",  # type: ignore[arg-type]
            additional_headers=cookie_header,
        )
    assert foreign.value.response.status_code == 403
    async with connect(
        server.ws_url,
        subprotocols=[TRANSPORT_WS],
        origin=server.url,  # type: ignore[arg-type]
        additional_headers=cookie_header,
    ) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
    await context.close()


async def test_a_reviewer_removed_from_the_group_is_signed_out_at_the_next_refresh(
    browser: Browser, scene: Callable[..., Awaitable[Scene]], sessionmaker: SessionMaker
) -> None:
    world = await scene(SIGNOFF_OIDC_SESSION_SECONDS="2")
    context = await offline_context(browser)
    page = await context.new_page()
    closed: list[int | None] = []
    page.on("websocket", lambda ws: ws.on("close", lambda _: closed.append(1)))
    await sign_in(page, world.server, "alice")
    await expect(page.locator(".task-link")).to_contain_text("Approve refund.create")

    world.provider.set_groups("alice", ["marketing"])
    # No click needed: the live subscription re-reads its viewer, the refresh finds no
    # mapped group, the session ends and the socket with it; the console says so.
    await expect(page.get_by_role("link", name=PROVIDER_BUTTON)).to_be_visible(timeout=LIVE_WITHIN)
    await expect(page.locator("#notice")).to_contain_text("(UNAUTHENTICATED)")
    assert closed, "the live connection stayed open"
    # It was the refresh that ended the session (the console's sign-out found it ended).
    async with sessionmaker() as session:
        ended = (
            await session.exec(
                select(AuditEvent.details).where(AuditEvent.action == "actor.console_signed_out")
            )
        ).all()
    assert [d["reason"] for d in ended] == ["refresh_failed"]
    await context.close()


async def test_token_paste_stays_where_the_operator_allows_it(
    browser: Browser, scene: Callable[..., Awaitable[Scene]]
) -> None:
    world = await scene(SIGNOFF_CONSOLE_TOKEN_SIGN_IN="1")
    context = await offline_context(browser)
    page = await context.new_page()
    await page.goto(world.server.url + "/")
    await expect(page.get_by_role("link", name=PROVIDER_BUTTON)).to_be_visible()
    await page.get_by_label("API token").fill(world.admin)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#live")).to_have_text("Live", timeout=LIVE_WITHIN)
    await expect(page.locator("#who")).to_have_text("admin (admin)")
    await context.close()


async def test_a_console_session_follows_over_server_sent_events_under_its_csrf_rule(
    scene: Callable[..., Awaitable[Scene]],
) -> None:
    """Issue 45: an event stream authenticates as a console's request does, by the session
    cookie with its CSRF token (and an Origin of Signoff's own, if any); without the token
    the stream is refused before it begins."""
    world = await scene()
    callback, sign_in_cookie = await _captured_callback(world)
    session = (await _callback(callback, sign_in_cookie)).cookies[CONSOLE_SESSION_COOKIE]
    subscribe = {"query": "subscription { queueEvents { kind proposalId } }"}
    accept = {"accept": "text/event-stream"}
    async with httpx.AsyncClient(base_url=world.server.url, timeout=30) as http:
        http.cookies.set(CONSOLE_SESSION_COOKIE, session)
        refused = await http.post("/graphql", json=subscribe, headers=accept)
        assert refused.json()["errors"][0]["extensions"]["code"] == "CSRF_REFUSED"
        elsewhere = {**_csrf_headers(session, world.server), "origin": "https://evil.example"}
        refused = await http.post("/graphql", json=subscribe, headers={**accept, **elsewhere})
        assert refused.json()["errors"][0]["extensions"]["code"] == "CSRF_REFUSED"

        headers = {**accept, **_csrf_headers(session, world.server)}
        async with http.stream("POST", "/graphql", json=subscribe, headers=headers) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            await world.server.subscriptions_live(1)
            decided = {
                "proposalId": world.proposal["id"],
                "decision": "REJECTED",
                "payloadDigest": world.proposal["payloadDigest"],
                "reason": "Seen live by a console session over SSE.",
            }
            async with httpx.AsyncClient(base_url=world.server.url, timeout=10) as admin:
                answer = await admin.post(
                    "/graphql",
                    json={"query": DECIDE, "variables": {"input": decided}},
                    headers={"authorization": f"Bearer {world.admin}"},
                )
                assert not answer.json().get("errors"), answer.json()
            async with asyncio.timeout(20):
                async for line in stream.aiter_lines():
                    if line.startswith("data:") and world.proposal["id"] in line:
                        break
