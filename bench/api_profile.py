"""Where a request's CPU goes: ``bench/api.py``'s ``page`` and ``one`` (or, with
``--operations``, ``hello``, ``propose`` and ``decide``) asked in process, under cProfile
(CPU time), with the phases of the page timed. ``--save`` keeps each profile for pstats.

A fresh PostgreSQL database is seeded as ``bench/api.py`` seeds it (``--proposals``, default
1,000), and the app is asked through httpx's ASGI transport (no sockets, one client, the
client's own work in the figures) with the reviewer's token (the agent's for ``propose``,
each with a new key; ``decide`` needs ``--proposals`` 2,000 or more): ``--warmup`` requests,
then ``--requests`` under cProfile (Python calls per request, and the functions of most own
CPU time with ``--top``), then as many again without it (process CPU per request, the
client's included, the server's phases: the page's read, its warming of the relations, its
connection, and the completion of the loaded objects by the executor; and the garbage
collector's passes and time, with the server's settings), then as many again counting the
objects that only the cyclic garbage collector would free (a request's objects caught in a
reference cycle).

    .venv/bin/python bench/api_profile.py --database-url postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import gc
import os
import pstats
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from api import HELLO, ONE, PAGE, body, decide_body, seed
from delivery import fresh_database

import signoff.schema.query as query_module
from signoff.cli import _tune_for_serving
from signoff.schema.approval.proposal import PageRelations
from signoff.schema.serving.execution import PlainFieldExecutor
from signoff.web.app import create_app

Phases = defaultdict[str, float]


def timed_phases(phases: Phases) -> None:
    """Time the page's phases into ``phases`` (CPU seconds, summed over requests)."""
    wrap(query_module, "call", awaited_into(phases, "call"))
    # The relations, primed from the rows read along the page (or read by keys).
    wrap(PageRelations, "warm_read", awaited_into(phases, "relations"))
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


class GarbageCollections:
    """The garbage collector's passes and their time while the block runs."""

    def __init__(self) -> None:
        self.passes = 0
        self.seconds = 0.0
        self._started = 0.0

    def __enter__(self) -> None:
        gc.callbacks.append(self._note)

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self._note)

    def _note(self, phase: str, _: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.passes += 1
            self.seconds += time.perf_counter() - self._started


async def cyclic_garbage(ask: Callable[[int], Awaitable[None]], count: int) -> int:
    """How many objects ``count`` requests left that only the cyclic collector frees."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        await ask(count)
        gc.collect()
        return len(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


async def measure(url: str, args: argparse.Namespace) -> None:
    world = await seed(url, args.proposals, 20)
    os.environ.update(SIGNOFF_DATABASE_URL=url, SIGNOFF_RATE_LIMIT="0", SIGNOFF_LOG_LEVEL="warning")
    app = create_app()
    bodies: dict[str, dict[str, Any]] = {
        "hello": {"query": HELLO},
        "page": {"query": PAGE},
        "one": {"query": ONE, "variables": {"id": world.proposal_id}},
    }
    keys = iter(range(10**9))
    undecided = iter(world.undecided[0])
    made = {operation: _always(fixed) for operation, fixed in bodies.items()}
    # The writes vary per request: a new operation key, a proposal not yet decided.
    made["propose"] = lambda: body("propose", world, f"profile-{next(keys)}")
    made["decide"] = lambda: decide_body(*next(undecided))
    reviewer = {"Authorization": f"Bearer {world.reviewer}"}
    agent = {"Authorization": f"Bearer {world.agent}"}
    phases: Phases = defaultdict(float)
    timed_phases(phases)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        for operation in args.operations:
            make = made[operation]
            headers = agent if operation == "propose" else reviewer

            async def ask(
                count: int, make: Callable[[], Any] = make, headers: dict[str, str] = headers
            ) -> None:
                for _ in range(count):
                    response = await client.post("/graphql", json=make(), headers=headers)
                    assert "errors" not in response.json(), response.text
                    assert response.status_code == 200, response.text

            await ask(args.warmup)
            _tune_for_serving()  # the server's garbage collector settings
            # Timed in CPU time: on wall time a call that wakes the database (a query's send)
            # is charged the time the scheduler gives PostgreSQL meanwhile.
            profile = cProfile.Profile(time.thread_time)
            profile.enable()
            await ask(args.requests)
            profile.disable()
            phases.clear()
            collections = GarbageCollections()
            start = time.process_time()
            with collections:
                await ask(args.requests)
            cpu = (time.process_time() - start) / args.requests * 1000
            cyclic = await cyclic_garbage(ask, args.requests)
            stats = pstats.Stats(profile)
            calls = stats.total_calls / args.requests  # type: ignore[attr-defined]
            print(f"{operation}: {calls:,.0f} Python calls/request, CPU {cpu:.2f} ms/request")
            for name, seconds in sorted(phases.items()):
                print(f"  {name}: {seconds / args.requests * 1000:.3f} ms/request")
            print(
                f"  garbage collector: {collections.passes / args.requests:.4f} passes, "
                f"{collections.seconds / args.requests * 1000:.3f} ms/request; "
                f"{cyclic / args.requests:,.1f} objects/request in reference cycles"
            )
            if args.top:
                stats.sort_stats("tottime").print_stats(args.top)
            if args.save:
                stats.dump_stats(f"{args.save}.{operation}")


def _always(fixed: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    return lambda: fixed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database-url", required=True, help="a PostgreSQL server")
    parser.add_argument("--proposals", type=int, default=1_000)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument(
        "--operations",
        nargs="+",
        choices=["hello", "page", "one", "propose", "decide"],
        default=["page", "one"],
    )
    parser.add_argument("--top", type=int, default=0, help="functions of most own time shown")
    parser.add_argument("--save", help="write each operation's profile to SAVE.<operation>")
    args = parser.parse_args()

    async def run() -> None:
        async with fresh_database(args.database_url) as url:
            await measure(url, args)

    asyncio.run(run())


if __name__ == "__main__":
    main()
