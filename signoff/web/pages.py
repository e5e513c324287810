"""The browser pages: the review console at ``/`` and GraphiQL at ``/graphql``, both served
from files inside the package (``signoff/static``), so neither needs the internet."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from functools import cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

Endpoint = Callable[[Request], Awaitable[Response]]

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

# The pages load only their own files and talk only to this origin (HTTP and websockets);
# GraphiQL sets inline styles, nothing runs inline script.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; connect-src 'self'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


@cache
def _read(relative: str) -> str:
    return (STATIC_DIR / relative).read_text(encoding="utf-8")


def graphiql_page() -> HTMLResponse:
    """GraphiQL from the vendored files (``signoff/static/graphiql/README.md``)."""
    return HTMLResponse(_read("graphiql/index.html"), headers=PAGE_HEADERS)


# Where the console's page carries its session (what GET /auth/session answers), so its
# first requests need not wait for one more round trip. A data block, never run: the CSP
# is unchanged.
SESSION_BLOCK = '<script type="application/json" id="console-session">{}</script>'


def console_html(session: Mapping[str, object]) -> str:
    """The review console's single page with ``session`` in it; the rest is static modules
    under ``/static``."""
    text = json.dumps(session, separators=(",", ":"))
    # Inside a <script> element only "</script" (or "<!--") could end it early.
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return _read("console/index.html").replace(SESSION_BLOCK, SESSION_BLOCK.replace("{}", text))


def page_routes(*, console_page: Endpoint | None) -> list[Route | Mount]:
    """``/static`` always (GraphiQL needs it), and the console at ``/`` when it is on."""
    routes: list[Route | Mount] = [
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    if console_page is not None:
        routes.insert(0, Route("/", console_page))
    return routes
