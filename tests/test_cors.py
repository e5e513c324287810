"""CORS for dashboards served from another origin: only the origins in
``SIGNOFF_CORS_ORIGINS`` may call the API from a browser (none by default), and their
preflights are answered. Checked from a real Chromium page served on another port."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from signoff.config import parse_origins
from signoff.database import SessionMaker
from tests.browser import offline_context
from tests.live import InProcessServer, Server, http_gql, serve_in_process

Serve = Callable[..., Awaitable[Server]]

# Run in the dashboard's page: what a dashboard's fetch of the API gets, or "blocked".
FETCH = """async ([url, token]) => {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: "{ viewer { actor { name } } }" }),
    });
    return await response.json();
  } catch (blocked) {
    return "blocked";
  }
}"""


@asynccontextmanager
async def dashboard() -> AsyncIterator[InProcessServer]:
    """A page on a loopback port of its own: another origin than the API's."""

    async def page(_: Any) -> HTMLResponse:
        return HTMLResponse("<!doctype html><title>dashboard</title><p>dashboard</p>")

    async with serve_in_process(Starlette(routes=[Route("/", page)])) as server:
        yield server


def test_origins_are_parsed_strictly() -> None:
    assert parse_origins("") == ()
    assert parse_origins("https://a.example, http://127.0.0.1:3000/") == (
        "https://a.example",
        "http://127.0.0.1:3000",
    )
    for wrong in ("a.example", "https://a.example/path", "ftp://a.example"):
        with pytest.raises(ValueError, match="SIGNOFF_CORS_ORIGINS"):
            parse_origins(wrong)


async def test_only_listed_origins_may_call_the_api_from_a_browser(
    browser: Browser, serve: Serve, sessionmaker: SessionMaker
) -> None:
    async with dashboard() as allowed, dashboard() as other:
        server = await serve(SIGNOFF_CORS_ORIGINS=allowed.url)
        async with http_gql(server, sessionmaker) as gql:
            token = await gql.token("reviewer", name="dash-reader")

        async with httpx.AsyncClient(base_url=server.url) as http:
            preflight = await http.options(
                "/graphql",
                headers={
                    "Origin": allowed.url,
                    "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "authorization, content-type",
                },
            )
            assert preflight.status_code == 200
            assert preflight.headers["access-control-allow-origin"] == allowed.url
            assert "access-control-allow-credentials" not in preflight.headers

        context = await offline_context(browser)
        page = await context.new_page()
        await page.goto(allowed.url + "/")
        answer = await page.evaluate(FETCH, [f"{server.url}/graphql", token])
        assert answer == {"data": {"viewer": {"actor": {"name": "dash-reader"}}}}

        await page.goto(other.url + "/")
        assert await page.evaluate(FETCH, [f"{server.url}/graphql", token]) == "blocked"
        await context.close()


async def test_no_origin_is_allowed_by_default(
    browser: Browser, serve: Serve, sessionmaker: SessionMaker
) -> None:
    async with dashboard() as elsewhere:
        server = await serve()
        async with http_gql(server, sessionmaker) as gql:
            token = await gql.token("reviewer", name="dash-reader")
        context = await offline_context(browser)
        page = await context.new_page()
        await page.goto(elsewhere.url + "/")
        assert await page.evaluate(FETCH, [f"{server.url}/graphql", token]) == "blocked"
        await context.close()
