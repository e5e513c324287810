"""The browser pages: the review console at ``/`` and GraphiQL at ``/graphql``, both served
from files inside the package (``signoff/static``), so neither needs the internet."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

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


async def console_page(_: Request) -> Response:
    """The review console's single page; the rest is static modules under ``/static``."""
    return HTMLResponse(_read("console/index.html"), headers=PAGE_HEADERS)


def page_routes(*, console: bool) -> list[Route | Mount]:
    """``/static`` always (GraphiQL needs it), and the console at ``/`` when it is on."""
    routes: list[Route | Mount] = [
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    if console:
        routes.insert(0, Route("/", console_page))
    return routes
