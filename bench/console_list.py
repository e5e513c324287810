"""The console's task list with a 1,000-task queue, in Chromium: its first paint and a
filter change, with the GraphQL time of the same requests beside them.

A fresh PostgreSQL database (SQLite without ``--database-url``) gets one queue with two
HUMAN targets (``summaryField`` amount; their agent executes, nothing is delivered) and
``--tasks`` proposals (default 1,000), each with its open approval task, amounts and
currencies varied, proposed through the resolvers (not timed). One ``signoff serve``
answers a headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright)
signed in as a reviewer of the queue.

- **first paint**: from the navigation's start to the first frame showing task rows
  (``performance.now()`` in the page, after a ``requestAnimationFrame``), the sign-in's
  requests included, and the part of it after the list's first answer came (the
  console's own work: reading it and drawing); and to the frame once every task is read
  (the list reads a first page of 15 per state, then 100 a page; it draws 50 rows at a time, its
  filters count all).
- **filter change**: from the click (or the keystroke, or the choice) to the next frame,
  all rows loaded: a filter link that leaves a few rows (``Overdue``), one that brings all
  back (``All``), the sort by amount (every row moved) and a search keystroke.
- **GraphQL**: the console's own request bodies, captured from the page, sent again over
  HTTP with one client: the first page (``query Tasks``), and every page in turn (eleven
  for 1,000 tasks).

Each is measured ``--rounds`` times (default 7, new page loads for the first paint); the
figures printed are medians, and the worst.

    .venv/bin/python bench/console_list.py --database-url postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

import httpx
from delivery import TOKENS, free_port, fresh_database, viewer
from executions import ready
from playwright.async_api import Page, async_playwright

from signoff.config import Settings, load_sealer, normalise_database_url
from signoff.database import create_engine, create_sessionmaker
from signoff.migrate import migrate
from signoff.models import ApprovalMode, Role
from signoff.resolvers.approval.proposals import propose_action
from signoff.resolvers.approval.queues import create_queue
from signoff.resolvers.core.work import Services, WorkMaker
from signoff.resolvers.targets.targets import register_target

HOST = "127.0.0.1"
CHROMIUM = os.environ.get("SIGNOFF_TEST_CHROMIUM", "/usr/bin/chromium")
CURRENCIES = ("EUR", "USD", "GBP")

# Installed before the console's own scripts: the time of the first frame with a row, and
# of the first once every task is read (the list's "Loading more" note gone).
WATCH_ROWS = """
window.paints = {};
const sent = window.fetch;
window.fetch = (url, options) => {
  const asked = sent(url, options);
  if (options && typeof options.body === "string" && options.body.includes("query Tasks")) {
    asked.then(() => { window.paints.listAnswered = performance.now(); });
  }
  return asked;
};
new MutationObserver(() => {
  const rows = document.querySelectorAll(".task").length;
  const frame = (name) => requestAnimationFrame(() => setTimeout(() => {
    if (!(name in window.paints)) window.paints[name] = performance.now();
  }));
  if (rows && !("firstRows" in window.paints)) frame("firstRows");
  if (rows && !document.getElementById("loading-more")) frame("allRows");
}).observe(document, { childList: true, subtree: true });
"""

# One filter change, timed from the action to the next frame: the console routes in its
# own hashchange listener, registered before this one, and draws synchronously there.
CHANGE = """
async ([kind, selector, value]) => {
  const settled = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done)));
  const element = document.querySelector(selector);
  const hashchange = () => new Promise((done) => addEventListener("hashchange", done, {once: 1}));
  const started = performance.now();
  if (kind === "link") {
    const routed = hashchange();
    element.click();
    await routed;
  } else if (kind === "select") {
    const routed = hashchange();
    element.value = value;
    element.dispatchEvent(new Event("change", { bubbles: true }));
    await routed;
  } else {
    element.value = value;
    element.dispatchEvent(new Event("input", { bubbles: true }));
  }
  await settled();
  return [performance.now() - started, document.querySelectorAll(".task").length];
}
"""


async def seed(url: str, tasks: int) -> str:
    """The queue, its targets and ``tasks`` proposals; the reviewer's token."""
    settings = Settings(database_url=normalise_database_url(url))
    engine = create_engine(settings.database_url)
    await migrate(engine)
    work = WorkMaker(create_sessionmaker(engine), Services(sealer=load_sealer(settings)))
    admin = await viewer(work, Role.ADMIN, "bench-admin")
    async with work() as unit:
        queue = await create_queue(work=unit, viewer=admin, slug="payments", name="Payments")
    targets = []
    for name in ("refunds", "payouts"):
        async with work() as unit:
            registered = await register_target(
                work=unit,
                viewer=admin,
                name=name,
                input_schema={"type": "object"},
                approval_mode=ApprovalMode.HUMAN,
                queue_id=queue.id,
                summary_field="amount",
            )
        targets.append(registered.target.id)
    agent = await viewer(work, Role.AGENT, "bench-agent")
    await viewer(work, Role.REVIEWER, "bench-reviewer", ["payments"])
    for i in range(tasks):
        async with work() as unit:
            await propose_action(
                work=unit,
                viewer=agent,
                target_id=targets[i % len(targets)],
                action_code="refund.create",
                operation_key=f"bench-{i}",
                payload={
                    "amount": 100 + (i * 7919) % 10_000,
                    "currency": CURRENCIES[i % len(CURRENCIES)],
                    "note": f"customer {i}",
                },
                subject={"order": f"o-{i}"},
            )
    await engine.dispose()
    return TOKENS["bench-reviewer"]


async def load(page: Page, base: str, tasks: int) -> dict[str, float]:
    """Open the console (the token already in the tab) and wait for every row."""
    await page.goto(base + "/")
    await page.wait_for_function(
        "(n) => 'allRows' in window.paints"
        " && document.querySelector('#tasks-title .count').textContent === ` (${n})`",
        arg=tasks,
        timeout=120_000,
    )
    paints: dict[str, float] = await page.evaluate("window.paints")
    return paints


CHANGES: list[tuple[str, str, str, str]] = [
    ("filter: Overdue (few rows)", "link", '.show[data-show="overdue"]', ""),
    ("filter: All (every row back)", "link", '.show[data-show="all"]', ""),
    ("sort by amount (every row moved)", "select", "#task-sort", "amount"),
    ("sort back to priority", "select", "#task-sort", "priority"),
    ("search: one keystroke", "input", "#task-search", "o-9"),
    ("search cleared", "input", "#task-search", ""),
]


async def browse(base: str, token: str, tasks: int, rounds: int) -> dict[str, list[float]]:
    took: dict[str, list[float]] = {
        "first rows painted": [],
        "  of which after the list's answer": [],
        "every task read": [],
    }
    took.update({name: [] for name, *_ in CHANGES})
    bodies: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for round_number in range(rounds + 1):  # the first round warms up
                context = await browser.new_context(viewport={"width": 1200, "height": 800})
                await context.add_init_script(
                    f"sessionStorage.setItem('signoff.token', {token!r});" + WATCH_ROWS
                )
                page = await context.new_page()
                if round_number == 0:
                    page.on("request", lambda r: bodies.append(r.post_data or ""))
                paints = await load(page, base, tasks)
                if round_number:
                    took["first rows painted"].append(paints["firstRows"])
                    took["  of which after the list's answer"].append(
                        paints["firstRows"] - paints["listAnswered"]
                    )
                    took["every task read"].append(paints["allRows"])
                for name, kind, selector, value in CHANGES:
                    elapsed, _ = await page.evaluate(CHANGE, [kind, selector, value])
                    if round_number:
                        took[name].append(elapsed)
                await context.close()
        finally:
            await browser.close()
    first = [b for b in bodies if "query Tasks" in b]
    more = [b for b in bodies if "query MoreTasks" in b]
    took.update(await graphql(base, token, first[0], more, rounds))
    return took


async def graphql(
    base: str, token: str, first: str, more: list[str], rounds: int
) -> dict[str, list[float]]:
    """The console's list requests again, over HTTP, one client."""
    took: dict[str, list[float]] = {"GraphQL: first page": [], "GraphQL: every page": []}
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
        for round_number in range(rounds + 1):
            started = time.perf_counter()
            answer = await http.post("/graphql", content=first)
            answer.raise_for_status()
            first_page = time.perf_counter() - started
            for body in more:
                (await http.post("/graphql", content=body)).raise_for_status()
            if round_number:
                took["GraphQL: first page"].append(first_page * 1000)
                took["GraphQL: every page"].append((time.perf_counter() - started) * 1000)
    return took


async def run(database_url: str | None, tasks: int, rounds: int) -> None:
    async with fresh_database(database_url) as url:
        token = await seed(url, tasks)
        port = free_port()
        env = {
            **os.environ,
            "SIGNOFF_DATABASE_URL": url,
            "SIGNOFF_LOG_LEVEL": "warning",
            "SIGNOFF_RATE_LIMIT": "0",
        }
        command = [sys.executable, "-m", "signoff", "serve", "--host", HOST, "--port", str(port)]
        server = subprocess.Popen(command, env=env)  # noqa: ASYNC220 - started once, not awaited
        base = f"http://{HOST}:{port}"
        try:
            await ready(base, server)
            took = await browse(base, token, tasks, rounds)
        finally:
            server.terminate()
            server.wait(timeout=30)
    backend = "PostgreSQL" if database_url else "SQLite"
    print(f"{tasks} tasks, {rounds} rounds, Chromium at 1200x800, {backend}")
    print(f"{'':36} {'median ms':>10} {'worst ms':>10}")
    for name, values in took.items():
        print(f"{name:36} {statistics.median(values):10.1f} {max(values):10.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=None, help="PostgreSQL server (default SQLite)")
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(run(args.database_url, args.tasks, args.rounds))


if __name__ == "__main__":
    main()
