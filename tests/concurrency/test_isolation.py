"""Racing transitions on a PostgreSQL server whose default isolation is REPEATABLE READ.

Compare-and-set (``UPDATE … WHERE state = expected``) needs READ COMMITTED: under
REPEATABLE READ the losers of a race fail with a serialization error (SQLSTATE 40001)
instead of updating nothing, and clients would see errors rather than a clean refusal.
The engine pins the level, so a server's or database's default cannot change it.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from httpx import ASGITransport, AsyncClient
from sqlalchemy import text
from sqlalchemy.engine import make_url

from signoff.config import Settings
from signoff.database import create_engine, create_sessionmaker
from signoff.migrate import migrate
from signoff.web.app import create_app
from tests.concurrency.test_races import codes_of, reviewers
from tests.conftest import fresh_database, requires_postgres
from tests.helpers import CLAIM, DECIDE, GraphQLClient, build_world

pytestmark = requires_postgres

RACERS = 30
REPEATABLE_READ = "default_transaction_isolation = 'repeatable read'"


@pytest.fixture
def repeatable_read_url(tmp_path: Path) -> Iterator[str]:
    """A scratch database whose sessions default to REPEATABLE READ, dropped after."""
    with fresh_database(tmp_path) as url:
        scratch = make_url(url)
        plain = scratch.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{scratch.database}" SET {REPEATABLE_READ}')
        yield url


@pytest.fixture
async def racing(repeatable_read_url: str, settings: Settings) -> AsyncIterator[GraphQLClient]:
    """The app on the REPEATABLE READ database, reached over in-process HTTP."""
    engine = create_engine(repeatable_read_url)
    await migrate(engine)
    await engine.dispose()
    app = create_app(dataclasses.replace(settings, database_url=repeatable_read_url))
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with AsyncClient(transport=transport, base_url="http://signoff.test") as http:
            yield GraphQLClient(http, create_sessionmaker(app.state.engine))


async def test_the_engine_reads_committed_whatever_the_database_default(
    repeatable_read_url: str,
) -> None:
    engine = create_engine(repeatable_read_url)
    try:
        async with engine.connect() as conn:
            default = (await conn.execute(text("SHOW default_transaction_isolation"))).scalar()
            level = (await conn.execute(text("SHOW transaction_isolation"))).scalar()
    finally:
        await engine.dispose()
    assert (default, level) == ("repeatable read", "read committed")


async def test_racing_decisions_have_one_winner_and_no_serialization_failure(
    racing: GraphQLClient,
) -> None:
    world = await build_world(racing, reviewers=0)
    proposal = (await world.propose())["proposal"]
    racers = await reviewers(racing, world.queue_slug, RACERS)
    decision = {
        "proposalId": proposal["id"],
        "decision": "APPROVED",
        "payloadDigest": proposal["payloadDigest"],
    }
    outcome = await codes_of(racing, [(DECIDE, {"input": decision}, r) for r in racers])
    assert outcome == Counter({"ok": 1, "NOT_AWAITING_APPROVAL": RACERS - 1})


async def test_racing_claims_have_one_winner_and_no_serialization_failure(
    racing: GraphQLClient,
) -> None:
    world = await build_world(racing, reviewers=0)
    task_id = (await world.propose())["task"]["id"]
    racers = await reviewers(racing, world.queue_slug, RACERS)
    outcome = await codes_of(racing, [(CLAIM, {"id": task_id}, r) for r in racers])
    assert outcome == Counter({"ok": 1, "TASK_CLAIMED_BY_OTHER": RACERS - 1})
