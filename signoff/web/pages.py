"""The browser pages: the review console at ``/`` and GraphiQL at ``/graphql``, both served
from files inside the package (``signoff/static``), so neither needs the internet."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping
from functools import cache
from pathlib import Path

import anyio
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import NotModifiedResponse, StaticFiles
from starlette.types import Scope

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


class PackageFiles(StaticFiles):
    """The pages' files, revalidated before each use (``no-cache``: a module cached past an
    upgrade would run beside the new version's), and answered from memory once read: the
    library stats and streams each file through worker threads, and the console's first
    screen asks for seventeen at once. An edit to them shows after a restart."""

    def __init__(self, *, directory: Path) -> None:
        super().__init__(directory=directory)
        self._held: dict[str, _HeldFile] = {}

    async def get_response(self, path: str, scope: Scope) -> Response:
        held = self._held.get(path) if scope["method"] == "GET" else None
        if held is not None:
            return held.answer(Headers(scope=scope), self)
        response = await super().get_response(path, scope)
        if scope["method"] == "GET" and isinstance(response, FileResponse):
            body = await anyio.to_thread.run_sync(Path(response.path).read_bytes)
            self._held[path] = _HeldFile(body, response.headers)
        return response

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers["Cache-Control"] = "no-cache"
        return response


class _HeldFile:
    """One file's bytes and the headers the library gave it (its ETag among them)."""

    def __init__(self, body: bytes, headers: Mapping[str, str]) -> None:
        self.body = body
        # Ranges are the library's (the first answer); these answers are whole.
        self.headers = {k: v for k, v in headers.items() if k.lower() != "accept-ranges"}

    def answer(self, asked: Headers, files: StaticFiles) -> Response:
        if files.is_not_modified(Headers(self.headers), asked):
            return NotModifiedResponse(Headers(self.headers))
        return Response(self.body, headers=self.headers)


def page_routes(*, console_page: Endpoint | None) -> list[Route | Mount]:
    """``/static`` always (GraphiQL needs it), and the console at ``/`` when it is on."""
    routes: list[Route | Mount] = [
        Mount("/static", PackageFiles(directory=STATIC_DIR), name="static"),
    ]
    if console_page is not None:
        routes.insert(0, Route("/", console_page))
    return routes
