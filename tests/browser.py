"""A real Chromium for the page tests: Debian's ``chromium`` package (``.ci/run`` installs
it), driven by Playwright without a browser download of its own. Without it the tests
skip, or fail under CI (``tests/machine.py``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

from playwright.async_api import Browser, BrowserContext, Page, Route, async_playwright

from tests.machine import missing, require_node_package
from tests.processes import ROOT

CHROMIUM = (
    os.environ.get("SIGNOFF_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
)
SCREENSHOTS = ROOT / "docs" / "screenshots"
AXE = ROOT / "tests" / "axe"  # axe-core, installed from its package-lock.json by `make test`
# The impacts a page must not have: axe's "serious" and "critical".
BLOCKING_IMPACTS = ("serious", "critical")
LOOPBACK = {"127.0.0.1", "localhost", "[::1]", "::1"}


def require_chromium() -> str:
    """The Chromium executable, or skip (locally) / fail (under CI) without one."""
    if Path(CHROMIUM).exists():
        return CHROMIUM
    missing(f"needs Chromium at {CHROMIUM} (apt-get install chromium)")


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """A headless Chromium (the ``browser`` fixture of ``tests/conftest.py``)."""
    executable = require_chromium()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            await launched.close()


async def offline_context(browser: Browser, **options: object) -> BrowserContext:
    """A browser context that can reach only loopback addresses: a request anywhere else is
    aborted and remembered in ``context.outside`` (a page that needs the internet fails)."""
    context = await browser.new_context(**options)  # type: ignore[arg-type]
    outside: list[str] = []

    async def only_loopback(route: Route) -> None:
        url = route.request.url
        host = urlsplit(url).hostname or ""
        if url.startswith(("data:", "blob:")) or host in LOOPBACK:
            await route.continue_()
        else:
            outside.append(url)
            await route.abort()

    await context.route("**/*", only_loopback)
    context.outside = outside  # type: ignore[attr-defined]
    return context


def console_errors(page: Page) -> list[str]:
    """Collects the page's console errors and uncaught exceptions as they happen."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def screenshot_path(name: str, directory: Path) -> Path:
    """Where a test saves a screenshot: ``directory`` (the test's own temporary one), or the
    README's ``docs/screenshots`` when ``SIGNOFF_UPDATE_SCREENSHOTS=1``, so an ordinary run
    leaves the working tree as it was."""
    if os.environ.get("SIGNOFF_UPDATE_SCREENSHOTS") == "1":
        directory = SCREENSHOTS
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{name}.png"


# Runs axe on the page as it is and keeps what matters, each violation with the elements
# it found (their selectors) so that a failure says where to look.
RUN_AXE = """async (impacts) => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations
    .filter((v) => impacts.includes(v.impact))
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                   nodes: v.nodes.map((n) => n.target.join(" ")) }));
}"""


async def axe_violations(page: Page) -> list[dict[str, object]]:
    """The serious and critical accessibility violations axe-core finds on ``page`` now.
    axe is put into the page through the browser's debugging protocol, which the page's
    Content Security Policy does not govern, so the page is checked as it is served."""
    require_node_package(AXE, "axe-core")
    source = (AXE / "node_modules" / "axe-core" / "axe.min.js").read_text(encoding="utf-8")
    if not await page.evaluate("() => typeof window.axe === 'object'"):
        await page.evaluate(source)
    found: list[dict[str, object]] = await page.evaluate(RUN_AXE, list(BLOCKING_IMPACTS))
    return found
