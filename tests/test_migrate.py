"""Migrations run forwards and back on the suite's database kind (SQLite or PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.ext.asyncio import AsyncEngine

from signoff.database import create_engine
from signoff.migrate import alembic_config, migrate
from tests.conftest import fresh_database

VERSIONED = ("proposals", "human_tasks", "incidents")


@pytest.fixture
async def scratch_engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    """An engine on a new, empty database of its own."""
    with fresh_database(tmp_path) as url:
        engine = create_engine(url)
        yield engine
        await engine.dispose()


async def _downgrade(engine: AsyncEngine, revision: str) -> None:
    def run(sync_connection: Any) -> None:
        config = alembic_config()
        config.attributes["connection"] = sync_connection
        command.downgrade(config, revision)

    async with engine.connect() as conn:
        await conn.run_sync(run)
        await conn.commit()


async def _version_columns(engine: AsyncEngine) -> dict[str, bool]:
    """Which tables have their version column."""
    tables = {**dict.fromkeys(VERSIONED, "version"), "change_events": "entity_version"}
    async with engine.connect() as conn:
        found = await conn.run_sync(lambda c: {t: sa.inspect(c).get_columns(t) for t in tables})
    return {t: any(col["name"] == tables[t] for col in found[t]) for t in tables}


INCIDENT = """
INSERT INTO incidents (id, fingerprint, kind, severity, state, title, entity_type, entity_id,
                       occurrence_count, first_seen_at, last_seen_at)
VALUES ('i-1', 'f-1', 'test', 'LOW', 'OPEN', 'old', 'proposal', 'p-1', 1,
        CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)
"""


async def test_entity_versions_upgrade_existing_rows_and_downgrade(
    scratch_engine: AsyncEngine,
) -> None:
    await migrate(scratch_engine, "0003")
    async with scratch_engine.begin() as conn:
        await conn.execute(sa.text(INCIDENT))
    await migrate(scratch_engine)
    async with scratch_engine.connect() as conn:
        version = (await conn.execute(sa.text("SELECT version FROM incidents"))).scalar_one()
    assert version == 1  # rows from before start at 1
    assert all((await _version_columns(scratch_engine)).values())

    await _downgrade(scratch_engine, "0003")
    assert not any((await _version_columns(scratch_engine)).values())
    await migrate(scratch_engine)
    assert all((await _version_columns(scratch_engine)).values())


async def _tables(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        return set(await conn.run_sync(lambda c: sa.inspect(c).get_table_names()))


async def test_key_checks_upgrade_and_downgrade(scratch_engine: AsyncEngine) -> None:
    await migrate(scratch_engine)
    assert "key_checks" in await _tables(scratch_engine)
    await _downgrade(scratch_engine, "0004")
    assert "key_checks" not in await _tables(scratch_engine)
    await migrate(scratch_engine)
    assert "key_checks" in await _tables(scratch_engine)
