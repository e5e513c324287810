"""How the console starts: its page carries the sign-in's session, so the viewer and the
task list's first page are asked for while the view modules are still on their way, not
after every one of them has come and run (issue 43's first paint)."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
from playwright.async_api import Browser, Request, Route, expect

from signoff.web.pages import STATIC_DIR, console_html
from tests.browser import console_errors, offline_context
from tests.conftest import ModuleServer, checked_once
from tests.helpers import build_world, unique_name
from tests.live import http_gql
from tests.test_console import DESKTOP, LIVE_WITHIN, signed_in

pytestmark = checked_once

SESSION_BLOCK = re.compile(
    r'<script type="application/json" id="console-session">(.*?)</script>', re.S
)


def test_a_session_cannot_end_the_block_that_carries_it() -> None:
    """A name from the identity provider is the reader's, not the page's: whatever it holds
    stays inside the data block and reads back as it was."""
    hostile = {"signedIn": True, "name": '</script><script>alert("x")</script><!-- & >'}
    page = console_html(hostile)
    blocks = SESSION_BLOCK.findall(page)
    assert len(blocks) == 1
    assert "<" not in blocks[0] and ">" not in blocks[0]
    assert json.loads(blocks[0]) == hostile
    assert page.count("<script") == console_html({}).count("<script")


async def test_the_page_carries_its_session_and_is_never_stored(
    module_server: ModuleServer,
) -> None:
    async with httpx.AsyncClient(base_url=module_server.server.url) as http:
        page = await http.get("/")
        session = await http.get("/auth/session")
    assert page.status_code == 200
    assert page.headers["cache-control"] == "no-store"
    assert "script-src 'self'" in page.headers["content-security-policy"]
    (carried,) = SESSION_BLOCK.findall(page.text)
    assert json.loads(carried) == session.json()
    assert session.json() == {"provider": False, "tokenSignIn": True, "signedIn": False}


async def test_the_console_files_are_asked_about_again_before_each_use(
    module_server: ModuleServer,
) -> None:
    """No heuristic caching: after an upgrade, no module of the old version runs beside
    the new one's; unchanged, a file costs a 304. The first answer comes from disk, later
    ones from memory: the same bytes and headers either way."""
    disk = (STATIC_DIR / "console" / "store.js").read_bytes()
    async with httpx.AsyncClient(base_url=module_server.server.url) as http:
        answers = [await http.get("/static/console/store.js") for _ in range(3)]
        again = await http.get(
            "/static/console/store.js", headers={"If-None-Match": answers[0].headers["etag"]}
        )
        head = await http.head("/static/console/store.js")
        missing = await http.get("/static/console/nothing-here.js")
    for answer in answers:
        assert answer.status_code == 200
        assert answer.content == disk
        assert answer.headers["cache-control"] == "no-cache"
        assert answer.headers["content-type"] == "text/javascript; charset=utf-8"
        assert answer.headers["etag"] == answers[0].headers["etag"]
    assert again.status_code == 304
    assert again.headers["cache-control"] == "no-cache"
    assert (head.status_code, head.headers["content-length"]) == (200, str(len(disk)))
    assert missing.status_code == 404


async def test_the_first_requests_do_not_wait_for_any_module(
    browser: Browser, module_server: ModuleServer
) -> None:
    """Reloaded with the tab's token and every console module held back, the console has
    already asked for the viewer and the list's first page (start.js, a classic script,
    sends them); once the modules come, the list is drawn from those answers, with no
    second request for either."""
    server = module_server.server
    async with http_gql(server, module_server.sessionmaker) as gql:
        world = await build_world(gql, reviewers=1, reviewer_names=unique_name("reviewer"))
        proposed = await world.propose({"amount": 4500, "currency": "EUR"})
        context, page, errors = await signed_in(browser, server, world.reviewers[0])
        asked: list[str] = []
        held, release, both_asked = asyncio.Event(), asyncio.Event(), asyncio.Event()
        reloading: asyncio.Task[object] | None = None

        def note(request: Request) -> None:
            body = request.post_data or ""
            asked.extend(name for name in ("query Viewer", "query Tasks") if name in body)
            if sorted(asked) == ["query Tasks", "query Viewer"]:
                both_asked.set()

        async def hold_the_modules(route: Route) -> None:
            held.set()
            await release.wait()
            await route.fallback()

        try:
            await expect(page.locator("#tasks-title")).to_be_visible()
            await page.route(re.compile(r"/static/console/(?!start\.js$).+\.js$"), hold_the_modules)
            page.on("request", note)
            reloading = asyncio.create_task(page.reload())
            await asyncio.wait_for(held.wait(), LIVE_WITHIN / 1000)
            await asyncio.wait_for(both_asked.wait(), LIVE_WITHIN / 1000)
            release.set()
            await reloading
            row = page.locator(f'.task[data-task-id="{proposed["task"]["id"]}"]')
            await expect(row).to_contain_text("order o-1", timeout=LIVE_WITHIN)
            assert sorted(asked) == ["query Tasks", "query Viewer"]
            assert errors == []
        finally:
            release.set()
            await context.close()
            if reloading is not None:
                await asyncio.gather(reloading, return_exceptions=True)


async def test_a_tab_without_a_token_opens_on_the_sign_in_form(
    browser: Browser, module_server: ModuleServer
) -> None:
    context = await offline_context(browser, viewport=DESKTOP)
    page = await context.new_page()
    errors = console_errors(page)
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    try:
        await page.goto(module_server.server.url + "/")
        await expect(page.get_by_label("API token")).to_be_visible()
        assert not [url for url in asked if url.endswith(("/graphql", "/auth/session"))]
        assert errors == []
    finally:
        await context.close()
