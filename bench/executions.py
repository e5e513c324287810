"""An agent's execution round trip: ``beginExecution`` then ``reportExecution``, beside a
plain ``proposal(id)`` read, in one run against one ``signoff serve``.

A fresh PostgreSQL database (SQLite without ``--database-url``) gets an agent and a
``BOUNDED_AUTO`` target without a url, so each proposal is approved at once for its agent
to execute. For each of ``--rounds`` proposals (default 500), proposed first (not timed),
one client on one connection times, in turn: a ``proposal(id:)`` read of it, and the
execution's round trip (``beginExecution`` then ``reportExecution`` ``APPLIED``, two
sequential requests, as ``signoff_client.execute`` makes them around the function). The
two alternate, so both meet the same drift of the machine. Prints p50 and p99 of each,
in milliseconds.

    python bench/executions.py --database-url postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

import httpx
from delivery import TOKENS, free_port, fresh_database, viewer

from signoff.config import Settings, load_sealer, normalise_database_url
from signoff.database import create_engine, create_sessionmaker
from signoff.migrate import migrate
from signoff.models import ApprovalMode, Role
from signoff.resolvers.core.work import Services, WorkMaker
from signoff.resolvers.targets.targets import register_target

HOST = "127.0.0.1"
PROPOSE = """mutation($i: ProposeActionInput!) {
  proposeAction(input: $i) { proposal { id payloadDigest } } }"""
READ = "query($id: ID!) { proposal(id: $id) { id state payloadDigest } }"
BEGIN = """mutation($i: BeginExecutionInput!) {
  beginExecution(input: $i) { lease proposal { id state } } }"""
REPORT = """mutation($i: ReportExecutionInput!) {
  reportExecution(input: $i) { replayed proposal { id state } } }"""


async def seed(url: str) -> tuple[str, str]:
    """The agent's token and the target's id, made through the resolvers."""
    settings = Settings(database_url=normalise_database_url(url))
    engine = create_engine(settings.database_url)
    await migrate(engine)
    work = WorkMaker(create_sessionmaker(engine), Services(sealer=load_sealer(settings)))
    admin = await viewer(work, Role.ADMIN, "bench-admin")
    async with work() as unit:
        registered = await register_target(
            work=unit,
            viewer=admin,
            name="bench-desk",
            input_schema={"type": "object"},
            approval_mode=ApprovalMode.BOUNDED_AUTO,
        )
    await viewer(work, Role.AGENT, "bench-agent")
    await engine.dispose()
    return TOKENS["bench-agent"], registered.target.id


async def call(http: httpx.AsyncClient, query: str, variables: dict[str, Any]) -> Any:
    answer = (await http.post("/graphql", json={"query": query, "variables": variables})).json()
    if answer.get("errors"):
        raise RuntimeError(answer["errors"])
    return answer["data"]


async def measure(base: str, token: str, target_id: str, rounds: int) -> dict[str, list[float]]:
    took: dict[str, list[float]] = {"proposal(id) read": [], "begin + report": []}
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as http:
        for _ in range(rounds):
            made = await call(
                http,
                PROPOSE,
                {
                    "i": {
                        "targetId": target_id,
                        "actionCode": "refund.create",
                        "payload": {"amount": 1},
                        "operationKey": uuid.uuid4().hex,
                    }
                },
            )
            proposal = made["proposeAction"]["proposal"]
            started = time.perf_counter()
            await call(http, READ, {"id": proposal["id"]})
            took["proposal(id) read"].append(time.perf_counter() - started)
            started = time.perf_counter()
            began = await call(
                http,
                BEGIN,
                {"i": {"proposalId": proposal["id"], "payloadDigest": proposal["payloadDigest"]}},
            )
            lease = began["beginExecution"]["lease"]
            await call(
                http,
                REPORT,
                {"i": {"proposalId": proposal["id"], "lease": lease, "outcome": "APPLIED"}},
            )
            took["begin + report"].append(time.perf_counter() - started)
    return took


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000


async def run(database_url: str | None, rounds: int) -> None:
    async with fresh_database(database_url) as url:
        token, target_id = await seed(url)
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
            await measure(base, token, target_id, 20)  # warm up
            took = await measure(base, token, target_id, rounds)
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"{rounds} rounds, one client, {'PostgreSQL' if database_url else 'SQLite'}")
    print(f"{'':20} {'p50 ms':>8} {'p99 ms':>8}")
    for name, values in took.items():
        print(f"{name:20} {statistics.median(values) * 1000:8.2f} {percentile(values, 0.99):8.2f}")


async def ready(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient(base_url=base) as http:
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise RuntimeError(f"the server exited with {server.returncode}")
            try:
                await http.get("/readyz", timeout=2)
                return
            except httpx.TransportError:
                await asyncio.sleep(0.2)
    raise RuntimeError("the server did not start within 60 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=None, help="PostgreSQL server (default SQLite)")
    parser.add_argument("--rounds", type=int, default=500)
    args = parser.parse_args()
    asyncio.run(run(args.database_url, args.rounds))


if __name__ == "__main__":
    main()
