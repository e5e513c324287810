"""The typed client in ``examples/typed_client``, generated from the checked-in SDL: its
operations are valid against the schema, and its example lists a queue and follows it live
against a real server."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable

import graphql

from signoff.database import SessionMaker
from tests.helpers import build_world
from tests.live import Server, http_gql
from tests.processes import ROOT

Serve = Callable[..., Awaitable[Server]]

EXAMPLE = ROOT / "examples" / "typed_client"


def test_the_clients_operations_are_valid_against_the_sdl() -> None:
    schema = graphql.build_schema((ROOT / "schema.graphql").read_text())
    document = graphql.parse((EXAMPLE / "queries.graphql").read_text())
    assert graphql.validate(schema, document) == []


async def read_line(process: asyncio.subprocess.Process, within: float = 20) -> str:
    assert process.stdout is not None and process.stderr is not None
    line = await asyncio.wait_for(process.stdout.readline(), within)
    assert line, f"the example ended early: {(await process.stderr.read()).decode()}"
    return line.decode().rstrip("\n")


async def test_the_example_lists_a_queue_and_follows_it_live(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1)
        await world.propose()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "follow_queue.py",
            "--url",
            server.url,
            "--token",
            world.reviewers[0],
            "--queue-id",
            world.queue_id,
            "--events",
            "2",
            cwd=EXAMPLE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            first = await read_line(process)
            assert first.startswith("open: Approve refund.create on refunds-"), first
            assert first.endswith("(priority 0, state OPEN)")
            assert await read_line(process) == "following"
            started = time.monotonic()
            await world.propose(operation_key="seen-live")
            lines = [await read_line(process), await read_line(process)]
            assert sorted(line.split(":")[0] for line in lines) == [
                "proposal.proposed",
                "task.created",
            ]
            assert time.monotonic() - started < 15
            assert await asyncio.wait_for(process.wait(), 10) == 0
            # It ends cleanly: the subscription is closed before the client, not left to
            # the interpreter's shutdown ("aclose(): asynchronous generator is already
            # running", "Task was destroyed but it is pending!").
            assert process.stderr is not None
            assert (await process.stderr.read()).decode() == ""
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
