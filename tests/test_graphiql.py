"""GraphiQL at ``/graphql`` in a real Chromium that can reach nothing but this machine: it
loads from the package's own files, and the token typed into its Headers tab authenticates
HTTP operations and subscriptions (as the websocket's ``connection_init``), without being
written to localStorage."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import httpx
from graphql import OperationDefinitionNode, parse, validate
from playwright.async_api import Browser, Page
from playwright.async_api import TimeoutError as PlaywrightTimeout

from signoff.internals import core_schema
from signoff.schema import build_schema
from signoff.web.pages import STATIC_DIR
from tests.browser import console_errors, offline_context
from tests.conftest import ModuleServer, checked_once
from tests.helpers import CREATE_QUEUE
from tests.live import Server, http_gql, server_log_on_failure

pytestmark = checked_once

Serve = Callable[..., Awaitable[Server]]

GRAPHIQL_VERSION = "3.8.3"

# GraphiQL 3 edits with CodeMirror 5, whose wrapper element carries the editor instance.
SET_EDITOR = "([selector, text]) => document.querySelector(selector).CodeMirror.setValue(text)"
RESULT = "() => document.querySelector('.result-window .CodeMirror').CodeMirror.getValue()"
RESULT_HAS = (
    "(text) => document.querySelector('.result-window .CodeMirror')"
    ".CodeMirror.getValue().includes(text)"
)
QUERY_EDITOR = ".graphiql-query-editor .CodeMirror"
HEADERS_EDITOR = ".graphiql-editor-tool .CodeMirror"
EDITOR_TEXT = "(selector) => document.querySelector(selector).CodeMirror.getValue()"
STARTER = STATIC_DIR / "graphiql" / "starter.graphql"


async def run(page: Page, document: str) -> None:
    await page.evaluate(SET_EDITOR, [QUERY_EDITOR, document])
    # GraphiQL parses the edited document after a short debounce; it chooses HTTP or the
    # websocket from that parse.
    await page.wait_for_timeout(500)
    await page.click(".graphiql-execute-button")


async def result_containing(page: Page, text: str) -> str:
    try:
        await page.wait_for_function(RESULT_HAS, arg=text, timeout=15_000)
    except PlaywrightTimeout:
        shown = await page.evaluate(RESULT)
        raise AssertionError(f"GraphiQL's result never showed {text!r}: {shown}") from None
    value: str = await page.evaluate(RESULT)
    return value


def test_the_vendored_files_are_the_pinned_versions() -> None:
    readme = (STATIC_DIR / "graphiql" / "README.md").read_text()
    assert f"graphiql@{GRAPHIQL_VERSION}" in readme
    bundle = (STATIC_DIR / "graphiql" / "graphiql.min.js").read_text()
    assert "graphql-transport-ws" in bundle  # subscriptions need graphql-ws, bundled
    for licence in ("LICENSE.graphiql", "LICENSE.react", "LICENSE.react-dom"):
        assert "MIT License" in (STATIC_DIR / "graphiql" / licence).read_text()


async def test_graphiql_page_loads_only_local_files(shared_server: Server) -> None:
    server = shared_server
    async with httpx.AsyncClient(base_url=server.url) as http:
        page = await http.get("/graphql", headers={"Accept": "text/html"})
        assert page.status_code == 200
        assert "https://" not in page.text and "http://" not in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
        for asset in ("graphiql.min.js", "graphiql.min.css", "react.production.min.js"):
            served = await http.get(f"/static/graphiql/{asset}")
            assert served.status_code == 200
            assert served.content == (STATIC_DIR / "graphiql" / asset).read_bytes()


async def test_headers_tab_token_authenticates_queries_and_subscriptions(
    browser: Browser, module_server: ModuleServer
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        admin = await gql.token("admin", name="graphiql-admin")
        context = await offline_context(browser)
        page = await context.new_page()
        errors = console_errors(page)
        with server_log_on_failure(server):
            await page.goto(f"{server.url}/graphql")
            await page.wait_for_selector(QUERY_EDITOR)

            await run(page, "{ viewer { actor { name } } }")
            assert "UNAUTHENTICATED" in await result_containing(page, "UNAUTHENTICATED")

            await page.get_by_role("button", name="Headers").click()
            headers = json.dumps({"Authorization": f"Bearer {admin}"})
            # Typed as a paste would put it (no bracket auto-closing), as a person does.
            # In place of the template the tab opens with, as a person replaces it.
            await page.locator(HEADERS_EDITOR).filter(visible=True).click()
            await page.keyboard.press("Control+A")
            await page.keyboard.insert_text(headers)
            await run(page, "{ viewer { actor { name } } }")
            assert "graphiql-admin" in await result_containing(page, "graphiql-admin")

            await run(page, "subscription { queueEvents { kind entityType } }")
            # The subscription is acknowledged before the change it should see is made.
            await page.wait_for_timeout(1_000)
            await gql(CREATE_QUEUE, {"input": {"slug": "seen-live", "name": "Seen"}}, admin)
            assert "queue.created" in await result_containing(page, "queue.created")

            stored = await page.evaluate("() => JSON.stringify(localStorage)")
            assert admin not in stored
            assert "Authorization" not in stored
            assert context.outside == []  # type: ignore[attr-defined]
            assert errors == []
        await context.close()


def test_the_starter_document_is_valid_against_the_schema() -> None:
    document = parse(STARTER.read_text())
    assert validate(core_schema(build_schema()), document) == []
    names = [
        operation.name.value
        for operation in document.definitions
        if isinstance(operation, OperationDefinitionNode) and operation.name
    ]
    assert names[:3] == ["WhoAmI", "CreateQueue", "RegisterTarget"]
    assert {"ProposeRefund", "OpenTasks", "ClaimTask", "Approve", "History"} <= set(names)


async def test_a_first_visit_opens_on_the_starter_document_and_a_headers_template(
    browser: Browser, module_server: ModuleServer
) -> None:
    context = await offline_context(browser)
    page = await context.new_page()
    errors = console_errors(page)
    await page.goto(f"{module_server.server.url}/graphql")
    await page.wait_for_selector(QUERY_EDITOR)

    shown = await page.evaluate(EDITOR_TEXT, QUERY_EDITOR)
    assert shown == STARTER.read_text()
    assert "Welcome to GraphiQL" not in shown
    headers = page.locator(HEADERS_EDITOR).filter(visible=True)
    await headers.wait_for()
    template = await headers.evaluate("(element) => element.CodeMirror.getValue()")
    assert json.loads(template) == {"Authorization": "Bearer <a token from signoff token create>"}
    assert errors == []
    await context.close()
