"""Slack notification benchmark: N approval tasks notified to C Slack channels (one queue
with C ``SLACK_APP`` channels) through a fake Slack Web API in its own process
(``bench/slack_api_receiver.py``). Prints messages per second and the p50/p99 time from a
task's creation (its proposal's commit) to ``chat.postMessage`` arriving at the fake.

    python bench/slack_fanout.py -n 1000 --channels 10 --rate 50

with the embedded default (SQLite, the in-process runner that sends notifications as
their transactions commit); ``--database-url`` runs it on PostgreSQL (a fresh database,
dropped afterwards). Proposals are made through the resolvers, as the API does without
HTTP, paced at ``--rate`` per second.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import httpx
from delivery import LOOPBACK, free_port, fresh_database, viewer
from sqlmodel import col, func, select

from signoff.config import Settings, load_sealer, normalise_database_url
from signoff.database import create_engine, create_sessionmaker
from signoff.jobs.runner import InProcessJobs
from signoff.migrate import migrate
from signoff.models import ApprovalMode, ChannelKind, Notification, Role
from signoff.resolvers.approval.proposals import propose_action
from signoff.resolvers.approval.queues import create_queue
from signoff.resolvers.core.work import Services, WorkMaker
from signoff.resolvers.reach.channels import add_notification_channel
from signoff.resolvers.targets.targets import register_target

PROPOSERS = 4


async def wait_for(http: httpx.AsyncClient, url: str, n: int) -> dict[str, float]:
    """Every message's arrival, once ``n`` have arrived (polled a few times a second)."""
    async with asyncio.timeout(900):
        while (await http.get(f"{url}/stats")).json()["distinct"] < n:  # noqa: ASYNC110
            await asyncio.sleep(0.25)
    seen: dict[str, float] = (await http.get(f"{url}/seen")).json()
    return seen


async def setup(work: WorkMaker, channels: int) -> tuple[str, object]:
    admin = await viewer(work, Role.ADMIN, "bench-admin")
    async with work() as unit:
        queue = await create_queue(work=unit, viewer=admin, slug="bench", name="Bench")
    for i in range(channels):
        async with work() as unit:
            await add_notification_channel(
                work=unit,
                viewer=admin,
                queue_id=queue.id,
                kind=ChannelKind.SLACK_APP,
                slack_channel=f"CBENCH{i:04d}",
            )
    async with work() as unit:
        registered = await register_target(
            work=unit,
            viewer=admin,
            name="bench",
            url="http://127.0.0.1:9/hook",
            input_schema={"type": "object"},
            approval_mode=ApprovalMode.HUMAN,
            queue_id=queue.id,
        )
    return registered.target.id, await viewer(work, Role.AGENT, "bench-agent")


async def propose_paced(
    work: WorkMaker, target_id: str, agent: object, n: int, rate: float
) -> dict[str, float]:
    """Propose ``n`` actions at ``rate`` per second; each proposal's commit time."""
    created: dict[str, float] = {}
    numbered = iter(range(n))
    start = time.time()

    async def proposer() -> None:
        for i in numbered:
            await asyncio.sleep(max(0.0, start + i / rate - time.time()))
            async with work() as unit:
                made = await propose_action(
                    work=unit,
                    viewer=agent,  # type: ignore[arg-type]
                    target_id=target_id,
                    action_code="bench.run",
                    operation_key=f"bench-{i}",
                    payload={"i": i},
                )
            created[made.proposal.id] = time.time()

    await asyncio.gather(*(proposer() for _ in range(PROPOSERS)))
    return created


async def attempts_made(work: WorkMaker) -> dict[tuple[int, str | None], int]:
    """How many notifications took how many attempts, and their last error."""
    async with work() as unit:
        rows = await unit.session.exec(
            select(Notification.attempt_count, Notification.last_error_code, func.count()).group_by(
                col(Notification.attempt_count), col(Notification.last_error_code)
            )
        )
        return {(count, error): n for count, error, n in rows.all()}


async def run(database_url: str | None, n: int, channels: int, rate: float) -> None:
    port = free_port()
    fake = await asyncio.create_subprocess_exec(
        sys.executable, str(Path(__file__).with_name("slack_api_receiver.py")), "--port", str(port)
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with fresh_database(database_url) as db, httpx.AsyncClient() as http:
            settings = Settings(
                database_url=normalise_database_url(db),
                slack_bot_token="xoxb-bench",
                slack_api_url=f"{url}/api/",
                delivery_allow_networks=LOOPBACK,  # the target's URL is on loopback
            )
            engine = create_engine(settings.database_url, pool_size=20)
            await migrate(engine)
            jobs = InProcessJobs(settings)
            services = Services(
                jobs=jobs,
                sealer=load_sealer(settings),
                slack_bot_token="xoxb-bench",
                destinations=settings.destinations,
            )
            work = WorkMaker(create_sessionmaker(engine), services)
            for _ in range(500):
                try:
                    await http.get(f"{url}/stats")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.02)
            target_id, agent = await setup(work, channels)
            await jobs.start(work)
            started = time.time()
            created = await propose_paced(work, target_id, agent, n, rate)
            seen = await wait_for(http, url, n * channels)
            await jobs.stop()
            attempts = await attempts_made(work)
            await engine.dispose()
    finally:
        fake.terminate()
        await fake.wait()
    latencies = sorted((arrived - created[key.split()[0]]) * 1000 for key, arrived in seen.items())
    elapsed = max(seen.values()) - started
    quantiles = statistics.quantiles(latencies, n=100)
    print(
        f"{n} tasks x {channels} channels = {len(seen)} messages in {elapsed:.1f} s: "
        f"{len(seen) / elapsed:.0f} messages/s; task creation -> chat.postMessage "
        f"p50 {statistics.median(latencies):.0f} ms, p99 {quantiles[98]:.0f} ms, "
        f"max {latencies[-1]:.0f} ms ({'PostgreSQL' if database_url else 'SQLite'}, "
        f"proposals at {rate:g}/s); attempts: {attempts}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=1000, help="approval tasks (default 1000)")
    parser.add_argument("--channels", type=int, default=10, help="Slack channels (default 10)")
    parser.add_argument("--rate", type=float, default=50.0, help="proposals per second")
    parser.add_argument("--database-url", help="PostgreSQL server (default: a SQLite file)")
    args = parser.parse_args()
    asyncio.run(run(args.database_url, args.n, args.channels, args.rate))


if __name__ == "__main__":
    main()
