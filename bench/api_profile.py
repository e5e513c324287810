"""Where one read's CPU goes: ``bench/api.py``'s ``page`` and ``one`` asked in process, under
cProfile, with the phases of the page timed.

A fresh PostgreSQL database is seeded as ``bench/api.py`` seeds it (``--proposals``, default
1,000), and the app is asked through httpx's ASGI transport (no sockets, one client, the
client's own work in the figures) with the reviewer's token: ``--warmup`` requests, then
``--requests`` under cProfile (Python calls per request, and the functions of most own
time with ``--top``), then as many again without it (process CPU per request, the client's
included, and the server's phases: the page's read, its warming of the relations, its
connection, and the completion of the loaded objects by the executor).

    .venv/bin/python bench/api_profile.py --database-url postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import os
import pstats
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from api import ONE, PAGE, seed
from delivery import fresh_database

import signoff.schema.query as query_module
from signoff.schema.serving.execution import PlainFieldExecutor
from signoff.web.app import create_app

Phases = defaultdict[str, float]


def timed_phases(phases: Phases) -> None:
    """Time the page's phases into ``phases`` (CPU seconds, summed over requests)."""
    for name in ("call", "warm_proposals"):
        wrap(query_module, name, awaited_into(phases, name))
    wrap(query_module, "connection", called_into(phases, "connection"))

    def root_only(function: Callable[..., Any]) -> Callable[..., Any]:
        timed = called_into(phases, "completion")(function)

        @functools.wraps(function)
        def completion(self: PlainFieldExecutor, *args: Any) -> Any:
            # The root field's value; graphql-core completes a non-null one again, inside.
            if args[3].prev is not None or phases.get("completing"):
                return function(self, *args)
            phases["completing"] = 1
            try:
                return timed(self, *args)
            finally:
                del phases["completing"]

        return completion

    wrap(PlainFieldExecutor, "complete_value", root_only)


def wrap(
    owner: Any, name: str, wrapper: Callable[[Callable[..., Any]], Callable[..., Any]]
) -> None:
    setattr(owner, name, wrapper(getattr(owner, name)))


def awaited_into(
    phases: Phases, phase: str
) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    def wrapper(function: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(function)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return await function(*args, **kwargs)
            finally:
                phases[phase] += time.process_time() - start

        return timed

    return wrapper


def called_into(phases: Phases, phase: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrapper(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                phases[phase] += time.process_time() - start

        return timed

    return wrapper


async def measure(url: str, args: argparse.Namespace) -> None:
    world = await seed(url, args.proposals, 20)
    os.environ.update(SIGNOFF_DATABASE_URL=url, SIGNOFF_RATE_LIMIT="0", SIGNOFF_LOG_LEVEL="warning")
    app = create_app()
    bodies: dict[str, dict[str, Any]] = {
        "page": {"query": PAGE},
        "one": {"query": ONE, "variables": {"id": world.proposal_id}},
    }
    headers = {"Authorization": f"Bearer {world.reviewer}"}
    phases: Phases = defaultdict(float)
    timed_phases(phases)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        for operation in args.operations:
            body = bodies[operation]

            async def ask(count: int, body: dict[str, Any] = body) -> None:
                for _ in range(count):
                    response = await client.post("/graphql", json=body, headers=headers)
                    assert "errors" not in response.json(), response.text
                    assert response.status_code == 200, response.text

            await ask(args.warmup)
            profile = cProfile.Profile()
            profile.enable()
            await ask(args.requests)
            profile.disable()
            phases.clear()
            start = time.process_time()
            await ask(args.requests)
            cpu = (time.process_time() - start) / args.requests * 1000
            stats = pstats.Stats(profile)
            calls = stats.total_calls / args.requests  # type: ignore[attr-defined]
            print(f"{operation}: {calls:,.0f} Python calls/request, CPU {cpu:.2f} ms/request")
            for name, seconds in sorted(phases.items()):
                print(f"  {name}: {seconds / args.requests * 1000:.3f} ms/request")
            if args.top:
                stats.sort_stats("tottime").print_stats(args.top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database-url", required=True, help="a PostgreSQL server")
    parser.add_argument("--proposals", type=int, default=1_000)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--operations", nargs="+", choices=["page", "one"], default=["page", "one"])
    parser.add_argument("--top", type=int, default=0, help="functions of most own time shown")
    args = parser.parse_args()

    async def run() -> None:
        async with fresh_database(args.database_url) as url:
            await measure(url, args)

    asyncio.run(run())


if __name__ == "__main__":
    main()
