"""The review console at ``/``, in a real Chromium that can reach nothing but this machine,
against real ``signoff serve`` processes and a real loopback receiver.

Reviewers sign in with their tokens, watch a proposal arrive live, claim it, approve it and
see it delivered; a second reviewer's screen follows every step live; a reviewer of another
queue never sees it. The console comes back after its server restarts and resumes its
subscription with ``after``. The screenshots in ``docs/screenshots`` are taken here, but
the Operations page's in ``tests/test_console_operations.py`` (``SIGNOFF_UPDATE_SCREENSHOTS=1``
writes them there).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import (
    Browser,
    BrowserContext,
    Page,
    Route,
    WebSocket,
    WebSocketRoute,
    expect,
)

from signoff.database import SessionMaker
from signoff.errors import SignoffError
from signoff.models import Role
from signoff.resolvers.access.actors import set_actor_role
from signoff.resolvers.core.work import UnitOfWork
from signoff.schema.serving import persisted
from signoff.web.pages import STATIC_DIR
from tests.browser import console_errors, offline_context, screenshot_path
from tests.client.blocking_proxy import refusing_websockets
from tests.conftest import ModuleServer, checked_once
from tests.helpers import CLAIM, CREATE_QUEUE, GraphQLClient, build_world, unique_name
from tests.live import Server, http_gql, server_log_on_failure
from tests.receivers import Receiver
from tests.receivers import serve as serve_receiver
from tests.redis_keys import unique_queue
from tests.schema.test_amendments import amend
from tests.test_readme import delivering, forget_jobs

Serve = Callable[..., Awaitable[Server]]

DESKTOP = {"width": 1200, "height": 800}
PHONE = {"width": 390, "height": 844}
LIVE_WITHIN = 15_000  # ms


def codes_the_server_defines() -> set[str]:
    codes = {"INTERNAL", "GRAPHQL_VALIDATION_FAILED", "REQUEST_TOO_LARGE"}
    codes |= {persisted.NOT_FOUND, persisted.NOT_ALLOWED, persisted.HASH_MISMATCH}
    codes.add(persisted.UNSUPPORTED)
    pending: list[type[SignoffError]] = [SignoffError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        code = getattr(cls, "code", None)
        if isinstance(code, str):
            codes.add(code)
    return codes


def test_every_refusal_code_has_a_message_in_the_console() -> None:
    messages = (STATIC_DIR / "console" / "messages.js").read_text()
    shown = set(re.findall(r"^  ([A-Z_]+):", messages, re.M))
    missing = codes_the_server_defines() - shown
    assert not missing, f"the console has no message for {sorted(missing)}"


@checked_once
async def test_console_page_is_served_from_the_package(module_server: ModuleServer) -> None:
    server = module_server.server
    async with httpx.AsyncClient(base_url=server.url) as http:
        page = await http.get("/")
        assert page.status_code == 200
        assert '<script type="module" src="/static/console/app.js">' in page.text
        assert "script-src 'self'" in page.headers["content-security-policy"]
        for name in ("app.js", "api.js", "messages.js", "console.css"):
            served = await http.get(f"/static/console/{name}")
            assert served.status_code == 200
            assert served.content == (STATIC_DIR / "console" / name).read_bytes()


async def signed_in(
    browser: Browser,
    server: Server,
    token: str,
    viewport: dict[str, int] = DESKTOP,
    sockets: Callable[[WebSocket], None] | None = None,
) -> tuple[BrowserContext, Page, list[str]]:
    context = await offline_context(browser, viewport=viewport)
    page = await context.new_page()
    errors = console_errors(page)
    if sockets is not None:
        page.on("websocket", sockets)
    await page.goto(server.url + "/")
    await page.get_by_label("API token").fill(token)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#live")).to_have_text("Live", timeout=LIVE_WITHIN)
    return context, page, errors


async def test_reviewers_decide_live_and_see_the_delivery(
    browser: Browser,
    serve: Serve,
    sessionmaker: SessionMaker,
    database_url: str,
    tmp_path: Path,
) -> None:
    queue = unique_queue()
    server = await serve(SIGNOFF_EMBEDDED_WORKER="1", SIGNOFF_ARQ_QUEUE=queue)
    proposal: dict[str, Any] = {"id": "none yet"}
    receiver = Receiver()
    async with (
        serve_receiver(receiver),
        http_gql(server, sessionmaker) as gql,
    ):
        world = await build_world(gql, reviewers=2, url=receiver.url)
        receiver.secret = world.signing_secret
        await gql(CREATE_QUEUE, {"input": {"slug": "elsewhere", "name": "Elsewhere"}}, world.admin)
        outsider = await gql.token("reviewer", name="outsider", queues=["elsewhere"])
        with delivering(database_url, queue, tmp_path), server_log_on_failure(server):
            try:
                await _decide_and_deliver(
                    browser, server, world, outsider, receiver, proposal, tmp_path / "shots"
                )
            finally:
                await forget_jobs(queue, proposal["id"])


async def _decide_and_deliver(
    browser: Browser,
    server: Server,
    world: Any,
    outsider: str,
    receiver: Receiver,
    proposal: dict[str, Any],
    shots: Path,
) -> None:
    sign_in_page = await (await offline_context(browser, viewport=DESKTOP)).new_page()
    await sign_in_page.goto(server.url + "/")
    await sign_in_page.get_by_label("API token").wait_for()
    await sign_in_page.screenshot(path=screenshot_path("console-sign-in", shots))
    await sign_in_page.context.close()

    alice_context, alice, alice_errors = await signed_in(browser, server, world.reviewers[0])
    bob_context, bob, bob_errors = await signed_in(browser, server, world.reviewers[1], PHONE)
    other_context, other, other_errors = await signed_in(browser, server, outsider)
    for page in (alice, bob, other):
        await expect(page.locator(".empty")).to_contain_text("Nothing waiting")

    proposed = await world.propose({"amount": 1200, "currency": "EUR"})
    proposal.update(proposed["proposal"])
    title = "Approve refund.create"
    for page in (alice, bob):
        await expect(page.locator(".task-link")).to_contain_text(title, timeout=LIVE_WITHIN)
    await alice.screenshot(path=screenshot_path("console-tasks", shots))

    # Alice opens it with the keyboard: j selects the first task, Enter opens it.
    await alice.keyboard.press("j")
    await alice.keyboard.press("Enter")
    await expect(alice.locator("#digest")).to_have_text(proposal["payloadDigest"])
    await expect(alice.locator(".json-block").first).to_contain_text("1200")
    await alice.keyboard.press("c")
    await expect(alice.locator(".facts")).to_contain_text("Claimed byyou")
    await expect(bob.locator(".task-meta")).to_contain_text("claimed by reviewer-0")
    await alice.screenshot(path=screenshot_path("console-proposal", shots), full_page=True)

    # Bob is offered no decision on what Alice holds, and told why; claiming it anyway is
    # refused, with the sentence for the code.
    await bob.locator(".task-link").click()
    await expect(bob.locator("#standing-closed")).to_contain_text("(TASK_CLAIMED_BY_OTHER)")
    await expect(bob.get_by_role("button", name="Approve")).to_have_count(0)
    await bob.get_by_role("button", name="Claim").click()
    await expect(bob.locator("#notice")).to_contain_text(
        "Another reviewer holds this task. Wait for them to release it. (TASK_CLAIMED_BY_OTHER)"
    )
    await bob.screenshot(path=screenshot_path("console-phone-refusal", shots), full_page=True)
    fits = "() => document.documentElement.scrollWidth <= window.innerWidth"
    assert await bob.evaluate(fits), "the proposal page scrolls sideways at phone width"

    await alice.keyboard.press("a")
    await expect(alice.locator(".facts")).to_contain_text("Applied", timeout=LIVE_WITHIN)
    await expect(alice.locator("#attempts-title")).to_have_text("Delivery attempts (1)")
    await expect(alice.locator("table")).to_contain_text("Applied")
    await expect(alice.locator("#approvals-title")).to_have_text("Approvals: 1 of 1")
    await alice.screenshot(path=screenshot_path("console-delivered", shots), full_page=True)
    assert [r.body["payload_digest"] for r in receiver.requests] == [proposal["payloadDigest"]]

    # Bob's screen followed: the proposal is delivered, the task is no longer his to decide.
    await expect(bob.locator(".facts")).to_contain_text("Applied", timeout=LIVE_WITHIN)
    await bob.keyboard.press("g")
    await expect(bob.locator(".empty")).to_contain_text("Nothing waiting")

    # The reviewer of another queue never saw any of it.
    await expect(other.locator(".empty")).to_contain_text("Nothing waiting")
    assert title not in await other.content()

    # An operator sees every queue and the operations snapshot with the delivery counted.
    ops_context, ops, ops_errors = await signed_in(browser, server, world.admin)
    await ops.get_by_role("link", name="Operations").click()
    await expect(ops.locator(".work h2")).to_have_text("Operations")
    await expect(ops.locator(".counts").first).to_contain_text("Applied 1")
    assert ops_errors == []

    for context in (alice_context, bob_context, other_context, ops_context):
        assert context.outside == []  # type: ignore[attr-defined]
        await context.close()
    assert alice_errors == [] and other_errors == []
    # Bob's refusal is an answer, not a page error; the browser logs nothing else.
    assert bob_errors == []


async def until(condition: Callable[[], bool], within: float = 10) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true in time"
        await asyncio.sleep(0.05)


async def test_console_resumes_after_its_server_restarts(
    browser: Browser, serve: Serve, gql: GraphQLClient
) -> None:
    server = await serve()
    # The agent proposes through the test's own app on the same database, which stays up
    # while the console's server is down.
    world = await build_world(gql, reviewers=1)
    subscribes: list[dict[str, Any]] = []
    cursors: list[str] = []

    def watch(socket: WebSocket) -> None:
        def sent(frame: str | bytes) -> None:
            message = json.loads(frame)
            if message.get("type") == "subscribe":
                subscribes.append(message["payload"]["variables"])

        def received(frame: str | bytes) -> None:
            message = json.loads(frame)
            if message.get("type") == "next":
                cursors.append(message["payload"]["data"]["queueEvents"]["cursor"])

        socket.on("framesent", sent)
        socket.on("framereceived", received)

    context, page, errors = await signed_in(browser, server, world.reviewers[0], sockets=watch)
    await world.propose()
    await expect(page.locator(".task")).to_have_count(1, timeout=LIVE_WITHIN)
    await until(lambda: bool(cursors))  # frame events reach the test on their own time
    seen = list(cursors)

    server.stop()
    await expect(page.locator("#live")).to_have_text("Reconnecting…", timeout=LIVE_WITHIN)
    await world.propose(operation_key="while-down")
    restarted = await serve(SIGNOFF_PORT=str(server.port))
    with server_log_on_failure(restarted):
        await expect(page.locator("#live")).to_have_text("Live", timeout=LIVE_WITHIN)
        await expect(page.locator(".task")).to_have_count(2, timeout=LIVE_WITHIN)
    # It subscribed again after the last event it had been given, so the proposal made
    # while it was away came as a replay, without reloading the page.
    assert seen and subscribes[-1]["after"] == seen[-1]

    # Claim and release with the mouse, then reject from the keyboard with a reason.
    await page.locator(".task-link").first.click()
    await page.get_by_role("button", name="Claim").click()
    await expect(page.locator(".facts")).to_contain_text("Claimed byyou")
    await page.get_by_role("button", name="Release").click()
    await expect(page.locator(".facts")).to_contain_text("Claimed bynobody")
    await page.keyboard.press("r")
    await expect(page.get_by_label("Reason")).to_be_focused()
    await page.keyboard.type("The amount is wrong")
    await page.keyboard.press("Control+Enter")
    await expect(page.locator(".facts")).to_contain_text("Rejected", timeout=LIVE_WITHIN)
    await expect(page.locator(".approvals")).to_contain_text("The amount is wrong")
    await page.keyboard.press("g")
    await expect(page.locator(".task")).to_have_count(1, timeout=LIVE_WITHIN)
    await page.keyboard.press("n")  # the next task, straight from the list
    await expect(page.locator("#digest")).to_be_visible()
    assert context.outside == []  # type: ignore[attr-defined]
    await context.close()
    # The dropped socket is the only thing the browser complained about.
    assert all("WebSocket" in e for e in errors), errors


async def test_what_a_reviewer_types_survives_live_updates_of_the_task(
    browser: Browser, module_server: ModuleServer
) -> None:
    """Every live event about the open task draws its page again. The amend form stays
    open with what was typed in it, and the reason box keeps its text; only when the
    payload itself changes is the edited payload set aside, and the reviewer is told."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    names = unique_name("reviewer")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=2, reviewer_names=names)
        made = await world.propose({"amount": 100, "currency": "EUR"})
        context, page, errors = await signed_in(browser, server, world.reviewers[0])
        try:
            await page.goto(f"{server.url}/#/task/{made['task']['id']}")
            await expect(page.locator(".facts")).to_contain_text("Claimed bynobody")
            await page.get_by_text("Amend the payload instead of rejecting it").click()
            edited = '{"amount": 90, "currency": "EUR"}'
            await page.locator("#amend-payload").fill(edited)
            await page.locator("#amend-reason").fill("The customer asked for 90.")
            await page.locator("#reason").fill("Checked with the customer")

            await gql(CLAIM, {"id": made["task"]["id"]}, world.reviewers[1])
            await expect(page.locator(".facts")).to_contain_text(
                f"Claimed by{names}-1", timeout=LIVE_WITHIN
            )
            await expect(page.locator("#amend-payload")).to_be_visible()
            await expect(page.locator("#amend-payload")).to_have_value(edited)
            await expect(page.locator("#amend-reason")).to_have_value("The customer asked for 90.")
            await expect(page.locator("#reason")).to_have_value("Checked with the customer")

            await amend(
                world,
                world.reviewers[1],
                made["proposal"],
                payload={"amount": 80, "currency": "EUR"},
            )
            await expect(page.locator("#notice")).to_contain_text(
                "The payload changed while you were editing it", timeout=LIVE_WITHIN
            )
            await expect(page.locator("#amend-payload")).to_be_visible()
            await expect(page.locator("#amend-payload")).to_have_value(
                json.dumps({"amount": 80, "currency": "EUR"}, indent=2)
            )
            await expect(page.locator("#amend-reason")).to_have_value("The customer asked for 90.")
            assert errors == []
        finally:
            await context.close()


PROPOSAL_STATE = """query($id: ID!) {
  proposal(id: $id) { state approvalCount revision payload payloadDigest }
}"""


@checked_once
async def test_a_reviewer_amends_a_proposal_then_approves_two_at_once(
    browser: Browser, module_server: ModuleServer
) -> None:
    """Issue 14 in the console: amend instead of rejecting, then one bulk decision whose
    items each name the digest the list showed (the amended one's new digest). The
    amender's approval of what they wrote is refused, in words (issue 41); another
    reviewer approves it."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    names = unique_name("reviewer")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=2, reviewer_names=names)
        small = await world.propose({"amount": 100, "currency": "EUR"})
        other = await world.propose({"amount": 200, "currency": "EUR"})
        context, page, errors = await signed_in(browser, server, world.reviewers[0])
        try:
            await page.goto(f"{server.url}/#/task/{small['task']['id']}")
            await page.get_by_text("Amend the payload instead of rejecting it").click()
            await page.locator("#amend-payload").fill('{"amount": 90, "currency": "EUR"}')
            await page.locator("#amend-reason").fill("The customer asked for 90, not 100.")
            await page.locator("#amend").click()
            await expect(page.locator("#notice")).to_contain_text("Amended", timeout=LIVE_WITHIN)
            amended = (await gql(PROPOSAL_STATE, {"id": small["proposal"]["id"]}, world.admin))[
                "proposal"
            ]
            assert (amended["revision"], amended["payload"]["amount"]) == (2, 90)
            assert amended["payloadDigest"] != small["proposal"]["payloadDigest"]

            await page.goto(f"{server.url}/#/")
            await page.reload()  # the list as loaded now: the amended digest
            await expect(page.locator("#live")).to_have_text("Live", timeout=LIVE_WITHIN)
            for made in (small, other):
                await page.locator(f"#pick-{made['task']['id']}").check()
            await expect(page.locator("#bulk-count")).to_contain_text("2 selected")
            await page.locator("#bulk-approve").click()
            notice = page.locator("#notice")
            await expect(notice).to_contain_text("Approved 1 of 2", timeout=LIVE_WITHIN)
            await expect(notice).to_contain_text("another person must approve what you wrote")
            assert errors == []
        finally:
            await context.close()
        await world.decide(world.reviewers[1], amended | {"id": small["proposal"]["id"]})
        for made in (small, other):
            decided = (await gql(PROPOSAL_STATE, {"id": made["proposal"]["id"]}, world.admin))[
                "proposal"
            ]
            assert (decided["state"], decided["approvalCount"]) == ("QUEUED", 1)


async def test_an_amendment_being_typed_survives_the_task_list_loading_late(
    browser: Browser, module_server: ModuleServer
) -> None:
    """The task page opened while the console's first task list is still on its way (a
    busy server): when the list comes, the page is drawn again with what the reviewer is
    typing and where they type it, and a live event about another proposal of the queue
    leaves it alone, so the amendment sends the edited payload."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=2, reviewer_names=unique_name("reviewer"))
        small = await world.propose({"amount": 100, "currency": "EUR"})
        frames: list[str] = []

        def watch(socket: WebSocket) -> None:
            socket.on("framereceived", lambda frame: frames.append(str(frame)))

        context, page, errors = await signed_in(browser, server, world.reviewers[0], sockets=watch)
        answered, release = asyncio.Event(), asyncio.Event()

        async def hold_the_list(route: Route) -> None:
            if "query Tasks" not in (route.request.post_data or ""):
                await route.fallback()
                return
            response = await route.fetch()  # the server answers now: its cursor is now
            answered.set()
            await release.wait()
            await route.fulfill(response=response)

        try:
            await expect(page.locator("#tasks-title")).to_be_visible()
            await page.route(re.compile(r"/graphql$"), hold_the_list)
            await page.reload()  # signs in again from the tab's token; its list is held
            await expect(page.locator("#live")).to_have_text("Live", timeout=LIVE_WITHIN)
            await asyncio.wait_for(answered.wait(), LIVE_WITHIN / 1000)
            other = await world.propose({"amount": 200, "currency": "EUR"})

            await page.goto(f"{server.url}/#/task/{small['task']['id']}")
            await page.get_by_text("Amend the payload instead of rejecting it").click()
            edited = '{"amount": 90, "currency": "EUR"}'
            await page.locator("#amend-payload").fill(edited)
            await page.locator("#amend-reason").fill("The customer asked for 90, not 100.")
            await page.evaluate("document.querySelector('.task-page').dataset.drawn = 'first'")

            release.set()
            await page.wait_for_function(
                "() => { const page = document.querySelector('.task-page');"
                " return page !== null && !page.dataset.drawn; }"
            )
            await until(lambda: any(other["proposal"]["id"] in frame for frame in frames))
            await expect(page.locator("#amend-payload")).to_have_value(edited)
            await expect(page.locator("#amend-reason")).to_have_value(
                "The customer asked for 90, not 100."
            )
            await expect(page.locator("#amend-reason")).to_be_focused()
            await page.locator("#amend").click()
            await expect(page.locator("#notice")).to_contain_text("Amended", timeout=LIVE_WITHIN)
            amended = (await gql(PROPOSAL_STATE, {"id": small["proposal"]["id"]}, world.admin))[
                "proposal"
            ]
            assert (amended["revision"], amended["payload"]) == (
                2,
                {"amount": 90, "currency": "EUR"},
            )
            assert errors == []
        finally:
            release.set()
            await context.close()


# Counts the answers the page has read and acted on: the timer runs once the code awaiting
# the body (drawing included) has run.
COUNT_ANSWERS = """
window.answersRead = 0;
const json = Response.prototype.json;
Response.prototype.json = function () {
  return json.call(this).then((body) => {
    setTimeout(() => { window.answersRead += 1; });
    return body;
  });
};
"""


@checked_once
async def test_a_task_page_answer_older_than_the_page_drawn_is_not_drawn(
    browser: Browser, module_server: ModuleServer
) -> None:
    """The first load of a task page comes back after a live event drew the page anew and
    the reviewer started typing: the older answer neither draws the earlier state over
    the newer one nor takes the reviewer out of the field they are in."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=2, reviewer_names=unique_name("reviewer"))
        made = await world.propose({"amount": 100, "currency": "EUR"})
        reviewer = world.reviewers[0]
        context, page, errors = await signed_in(browser, server, reviewer)
        asked, release = asyncio.Event(), asyncio.Event()
        held: list[Route] = []

        async def hold_the_first_load(route: Route) -> None:
            if held or "query Task(" not in (route.request.post_data or ""):
                await route.fallback()
                return
            held.append(route)
            response = await route.fetch()  # answered now, before the claim
            asked.set()
            await release.wait()
            await route.fulfill(response=response)

        try:
            await page.add_init_script(COUNT_ANSWERS)
            await page.reload()
            await expect(page.locator("#tasks-title")).to_be_visible(timeout=LIVE_WITHIN)
            await page.route(re.compile(r"/graphql$"), hold_the_first_load)
            await page.goto(f"{server.url}/#/task/{made['task']['id']}")
            await asyncio.wait_for(asked.wait(), LIVE_WITHIN / 1000)
            await gql(CLAIM, {"id": made["task"]["id"]}, reviewer)
            await expect(page.locator(".facts")).to_contain_text(
                "Claimed byyou", timeout=LIVE_WITHIN
            )
            await page.get_by_text("Amend the payload instead of rejecting it").click()
            await page.locator("#amend-reason").fill("The customer asked for 90.")

            read = await page.evaluate("window.answersRead")
            release.set()
            await page.wait_for_function("(read) => window.answersRead > read", arg=read)
            await expect(page.locator(".facts")).to_contain_text("Claimed byyou")
            await expect(page.locator("#amend-reason")).to_be_focused()
            await expect(page.locator("#amend-reason")).to_have_value("The customer asked for 90.")
            await expect(page.locator("#notice")).to_be_hidden()
            assert errors == []
        finally:
            release.set()
            await context.close()


class Traffic:
    """What a page asks of the server: its GraphQL requests and the websockets it opens."""

    def __init__(self, page: Page) -> None:
        self.requests: list[str] = []
        self.sockets: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url) if "/graphql" in r.url else None)
        page.on("websocket", lambda s: self.sockets.append(s.url))

    def __repr__(self) -> str:
        return f"{len(self.requests)} requests, {len(self.sockets)} websockets"


async def assert_signed_out_naming_the_roles(page: Page) -> None:
    notice = page.locator("#notice")
    for role in ("reviewers", "operators", "admins"):
        await expect(notice).to_contain_text(role)
    await expect(page.get_by_label("API token")).to_be_visible()
    assert not await page.evaluate("document.body.classList.contains('signed-in')")
    assert await page.evaluate("sessionStorage.length") == 0


@checked_once
async def test_an_agent_token_is_told_who_may_use_the_console_and_not_retried(
    browser: Browser, module_server: ModuleServer
) -> None:
    """Issue 35: an agent's queueEvents is refused; the console looped, resubscribing and
    reloading the list dozens of times a second under a "Live" header. Now it says who
    may use it and signs out, having asked the server next to nothing."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    names = unique_name("reviewer")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=0, reviewer_names=names)
    context = await offline_context(browser, viewport=DESKTOP)
    try:
        page = await context.new_page()
        errors = console_errors(page)
        traffic = Traffic(page)
        await page.goto(server.url + "/")
        await page.get_by_label("API token").fill(world.agent)
        await page.get_by_role("button", name="Sign in").click()
        await asyncio.sleep(2)
        assert len(traffic.requests) <= 3 and len(traffic.sockets) <= 1, traffic
        await assert_signed_out_naming_the_roles(page)
        await expect(page.locator("#notice")).to_contain_text("This token is an agent's.")
        assert errors == []
    finally:
        await context.close()


async def test_a_reviewer_demoted_while_watching_is_signed_out_once(
    browser: Browser, module_server: ModuleServer
) -> None:
    """The server ends the feed with FORBIDDEN when the role changes under an open console:
    one refusal, one sign-out, no retry."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    names = unique_name("reviewer")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1, reviewer_names=names)
    traffic: Traffic | None = None

    def count(socket: WebSocket) -> None:
        if traffic is not None:
            traffic.sockets.append(socket.url)

    context, page, errors = await signed_in(browser, server, world.reviewers[0], sockets=count)
    try:
        traffic = Traffic(page)
        async with sessionmaker() as session:
            await set_actor_role(work=UnitOfWork(session), name=f"{names}-0", role=Role.AGENT)
        await expect(page.get_by_label("API token")).to_be_visible(timeout=LIVE_WITHIN)
        await asyncio.sleep(2)
        assert len(traffic.requests) <= 3 and len(traffic.sockets) <= 1, traffic
        await assert_signed_out_naming_the_roles(page)
        await expect(page.locator("#notice")).to_contain_text("(FORBIDDEN)")
        assert errors == []
    finally:
        await context.close()


@checked_once
async def test_only_roles_that_decide_get_bulk_checkboxes(
    browser: Browser, serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1)
        operator = await gql.token(Role.OPERATOR, name="ops")
        await world.propose()
    for token, picks in ((world.reviewers[0], 1), (world.admin, 1), (operator, 0)):
        context, page, errors = await signed_in(browser, server, token)
        try:
            await expect(page.locator(".task")).to_have_count(1, timeout=LIVE_WITHIN)
            await expect(page.locator(".task .pick")).to_have_count(picks)
            assert errors == []
        finally:
            await context.close()


@checked_once
async def test_an_operator_reads_a_proposal_without_a_decision_form(
    browser: Browser, module_server: ModuleServer
) -> None:
    """Issue 35: an operator's task page offered Approve and Reject, which the server
    refuses. The deciders' rule of the bulk checkboxes now holds for the page too: the
    operator reads the proposal and its payload, and is told why there is no form."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1, reviewer_names=unique_name("reviewer"))
        operator = await gql.token(Role.OPERATOR, name=unique_name("ops"))
        made = await world.propose({"amount": 4242, "currency": "EUR"})
    context, page, errors = await signed_in(browser, server, operator)
    try:
        await page.locator(f'[data-task-id="{made["task"]["id"]}"] .task-link').click()
        await expect(page.locator("#digest")).to_be_visible()
        await expect(page.locator(".json-block").first).to_contain_text("4242")
        await expect(page.locator("#no-decision")).to_contain_text("an operator")
        await expect(page.locator("#no-decision")).to_contain_text("no decision form")
        for absent in ("form.decide", "details.amend", "#approve", "#reject", "#claim"):
            await expect(page.locator(absent)).to_have_count(0)
        assert errors == []
    finally:
        await context.close()


async def test_a_refusal_on_a_task_page_is_gone_back_on_the_list(
    browser: Browser, module_server: ModuleServer
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    names = unique_name("reviewer")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=2, reviewer_names=names)
        made = await world.propose()
        await gql(CLAIM, {"id": made["task"]["id"]}, world.reviewers[1])
    context, page, errors = await signed_in(browser, server, world.reviewers[0])
    try:
        await page.locator(".task-link").click()
        await page.get_by_role("button", name="Claim").click()
        await expect(page.locator("#notice")).to_contain_text("(TASK_CLAIMED_BY_OTHER)")
        await page.get_by_role("link", name="← All tasks").click()
        await expect(page.locator(".task")).to_have_count(1)
        await expect(page.locator("#notice")).to_be_hidden()
        assert errors == []
    finally:
        await context.close()


@checked_once
async def test_task_rows_tell_proposals_apart_and_the_payload_comes_before_the_decision(
    browser: Browser, module_server: ModuleServer
) -> None:
    """Issue 35: every row read "Approve refund.create on refunds-… · OPEN …". A row now
    shows the target's summary field, the subject, the proposer and the age."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    names = unique_name("reviewer")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1, summaryField="amount", reviewer_names=names)
        small = await world.propose({"amount": 100, "currency": "EUR"})
        await world.propose({"amount": 2500, "currency": "EUR"}, subject={"order": "o-2"})
    context, page, errors = await signed_in(browser, server, world.reviewers[0])
    try:
        rows = page.locator(".task")
        await expect(rows).to_have_count(2)
        for amount, order in ((100, "o-1"), (2500, "o-2")):
            # The amount with its currency, as the reader's locale writes it (issue 43).
            euros = await page.evaluate(
                "(n) => new Intl.NumberFormat(undefined, {style: 'currency', currency: 'EUR'})"
                ".format(n)",
                amount,
            )
            row = rows.filter(has=page.locator(".summary", has_text=euros))
            await expect(row).to_have_count(1)
            await expect(row).to_contain_text(f"order {order}")
            await expect(row).to_contain_text("proposed by agent")
            await expect(row.locator(".task-what time")).to_have_text(
                re.compile(r"now|seconds? ago|minutes? ago")
            )
        texts = await rows.locator(".task-what").all_inner_texts()
        assert len(set(texts)) == 2, texts

        await page.locator(f'[data-task-id="{small["task"]["id"]}"] .task-link').click()
        await expect(page.locator("form.decide")).to_be_visible()
        payload_first = """() => {
            const payload = document.querySelector(".json-block");
            const form = document.querySelector("form.decide");
            const after = payload.compareDocumentPosition(form);
            return payload.querySelector("h3").textContent === "Payload"
                && Boolean(after & Node.DOCUMENT_POSITION_FOLLOWING);
        }"""
        assert await page.evaluate(payload_first)
        assert errors == []
    finally:
        await context.close()


async def test_a_socket_that_keeps_dropping_is_retried_less_and_less_often(
    browser: Browser, module_server: ModuleServer
) -> None:
    """A websocket that is acknowledged and then drops at once (a proxy cutting it, a
    server failing each subscription) was retried every 250 ms for ever, since each
    acknowledgement reset the delay. Retries now back off exponentially."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    names = unique_name("reviewer")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1, reviewer_names=names)
    opened: list[float] = []
    drops: set[asyncio.Task[None]] = set()

    async def dropping(socket: WebSocketRoute) -> None:
        opened.append(time.monotonic())

        def received(frame: str | bytes) -> None:
            kind = json.loads(frame).get("type")
            if kind == "connection_init":
                socket.send(json.dumps({"type": "connection_ack"}))
            elif kind == "subscribe":
                drop = asyncio.create_task(socket.close(code=1011, reason="dropped"))
                drops.add(drop)
                drop.add_done_callback(drops.discard)

        socket.on_message(received)

    context = await offline_context(browser, viewport=DESKTOP)
    try:
        page = await context.new_page()
        await page.route_web_socket(re.compile(r"/graphql$"), dropping)
        await page.goto(server.url + "/")
        await page.get_by_label("API token").fill(world.reviewers[0])
        await page.get_by_role("button", name="Sign in").click()
        await until(lambda: bool(opened))
        await asyncio.sleep(4)
        gaps = [b - a for a, b in itertools.pairwise(opened)]
        assert len(opened) <= 5, gaps
        assert gaps and gaps[-1] > 1, gaps
        await expect(page.locator("#live")).to_have_text("Reconnecting…")
    finally:
        await context.close()


async def test_a_feed_the_server_completes_is_not_called_live_and_is_resumed(
    browser: Browser, module_server: ModuleServer
) -> None:
    """Issue 35: when the server completed ``queueEvents`` without an error, the header
    still said "Live" and nothing followed the queue any more. The header now says the
    feed stopped, and the console subscribes again from its cursor on the same socket,
    waiting longer after each completion (not a tight loop)."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1, reviewer_names=unique_name("reviewer"))
    opened: list[float] = []
    subscribed: list[tuple[float, dict[str, Any]]] = []
    completions = 3

    async def completing(socket: WebSocketRoute) -> None:
        opened.append(time.monotonic())

        def received(frame: str | bytes) -> None:
            message = json.loads(frame)
            if message.get("type") == "connection_init":
                socket.send(json.dumps({"type": "connection_ack"}))
            elif message.get("type") == "subscribe":
                subscribed.append((time.monotonic(), message["payload"]["variables"]))
                if len(subscribed) <= completions:
                    socket.send(json.dumps({"id": message["id"], "type": "complete"}))

        socket.on_message(received)

    context = await offline_context(browser, viewport=DESKTOP)
    try:
        page = await context.new_page()
        errors = console_errors(page)
        await page.route_web_socket(re.compile(r"/graphql$"), completing)
        await page.goto(server.url + "/")
        await page.get_by_label("API token").fill(world.reviewers[0])
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.locator("#live")).to_have_text("Feed stopped; resuming…")
        await until(lambda: len(subscribed) > completions)
        await expect(page.locator("#live")).to_have_text("Live")
        await asyncio.sleep(1)
        assert len(subscribed) == completions + 1 and len(opened) == 1, subscribed
        gaps = [b - a for (a, _), (b, _) in itertools.pairwise(subscribed)]
        assert gaps[0] >= 0.2 and gaps[-1] > gaps[0], gaps
        cursors = {variables.get("after") for _, variables in subscribed}
        assert len(cursors) == 1 and None not in cursors, subscribed
        assert errors == []
    finally:
        await context.close()


async def test_a_console_behind_a_proxy_that_refuses_websockets_follows_over_sse(
    browser: Browser, module_server: ModuleServer
) -> None:
    """Issue 45: behind a proxy that refuses websocket upgrades the console went dark.
    It now follows its queue over one Server-Sent Events stream (graphql-sse's single
    connection mode) on the same endpoint, and still resumes from its cursor."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1, reviewer_names=unique_name("reviewer"))
        async with refusing_websockets(server.port) as port:
            context = await offline_context(browser, viewport=DESKTOP)
            try:
                page = await context.new_page()
                sent: list[str] = []
                page.on("request", lambda r: sent.append(f"{r.method} {r.url.split('/')[-1]}"))
                await page.goto(f"http://127.0.0.1:{port}/")
                await page.get_by_label("API token").fill(world.reviewers[0])
                await page.get_by_role("button", name="Sign in").click()
                await expect(page.locator("#live")).to_have_text("Live", timeout=LIVE_WITHIN)
                await server.subscriptions_live(1)
                await world.propose()
                await expect(page.locator(".task")).to_have_count(1, timeout=LIVE_WITHIN)
                await world.propose(operation_key="second")
                await expect(page.locator(".task")).to_have_count(2, timeout=LIVE_WITHIN)
                assert "PUT graphql" in sent and "GET graphql" in sent
            finally:
                await context.close()


@checked_once
async def test_the_task_page_shows_who_executed_a_proposal_and_its_result(
    browser: Browser, module_server: ModuleServer
) -> None:
    """Issue 42: on a target its agent executes, the page shows the agent that took the
    execution (and its label) and the result it reported, where deliveries show attempts."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(
            gql, reviewers=1, reviewer_names=unique_name("reviewer"), url=None
        )
        operator = await gql.token(Role.OPERATOR, name=unique_name("ops"))
        made = await world.propose({"amount": 4343, "currency": "EUR"})
        proposal = made["proposal"]
        await world.decide(world.reviewers[0], proposal)
        began = await gql(
            BEGIN_EXECUTION,
            {
                "i": {
                    "proposalId": proposal["id"],
                    "payloadDigest": proposal["payloadDigest"],
                    "executor": "desk-7:4242",
                }
            },
            world.agent,
        )
        await gql(
            REPORT_EXECUTION,
            {
                "i": {
                    "proposalId": proposal["id"],
                    "lease": began["beginExecution"]["lease"],
                    "outcome": "APPLIED",
                    "result": {"refund_id": "r-4343"},
                }
            },
            world.agent,
        )
    context, page, errors = await signed_in(browser, server, operator)
    try:
        await page.goto(f"{server.url}/#/task/{made['task']['id']}")
        await expect(page.locator("#execution-title")).to_have_text("Execution by the agent")
        await expect(page.locator("#executed-by")).to_contain_text("agent (desk-7:4242)")
        await expect(page.locator("#executed-by")).to_contain_text("Applied")
        await expect(page.locator("#attempts-title")).to_have_count(0)
        await expect(page.locator(".json-block").last).to_contain_text("r-4343")
        assert errors == []
    finally:
        await context.close()


BEGIN_EXECUTION = "mutation($i: BeginExecutionInput!) { beginExecution(input: $i) { lease } }"
REPORT_EXECUTION = "mutation($i: ReportExecutionInput!) { reportExecution(input: $i) { replayed } }"


@checked_once
async def test_signing_out_leaves_no_live_dot(
    browser: Browser, module_server: ModuleServer
) -> None:
    """Issue 43, item 5: the header said nothing after sign-out, but its green dot stayed."""
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1, reviewer_names=unique_name("reviewer"))
    context, page, errors = await signed_in(browser, server, world.reviewers[0])
    await page.locator("#sign-out").click()
    await expect(page.get_by_label("API token")).to_be_visible()
    dot = "() => getComputedStyle(document.getElementById('live'), '::before').content"
    assert await page.evaluate(dot) in ("none", "normal")
    assert await page.locator("#live").get_attribute("data-state") is None
    assert errors == []
    await context.close()
