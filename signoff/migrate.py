"""Bring the database schema up to date with Alembic, on SQLite or PostgreSQL."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

MIGRATIONS = Path(__file__).parent / "migrations"
# Any fixed number: serialises `signoff serve` processes that start together.
ADVISORY_LOCK_ID = 0x5160FF

logger = logging.getLogger(__name__)


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


async def migrate(engine: AsyncEngine, revision: str = "head") -> None:
    """Upgrade to ``revision``; concurrent callers on PostgreSQL wait for each other."""
    async with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_lock(:id)"), {"id": ADVISORY_LOCK_ID})
            await conn.commit()
        try:
            await conn.run_sync(_upgrade, revision)
            await conn.commit()
        finally:
            if conn.dialect.name == "postgresql":
                await conn.execute(text("SELECT pg_advisory_unlock(:id)"), {"id": ADVISORY_LOCK_ID})
                await conn.commit()


def _upgrade(sync_connection: Any, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = sync_connection
    before = _current_revision(sync_connection)
    command.upgrade(config, revision)
    after = _current_revision(sync_connection)
    if after != before:
        logger.info(_summary(config, before, after))


def _current_revision(sync_connection: Any) -> str | None:
    return MigrationContext.configure(sync_connection).get_current_revision()


def _summary(config: Config, before: str | None, after: str | None) -> str:
    """One line for a whole upgrade (Alembic's own logger says a line per migration)."""
    steps = sum(1 for _ in ScriptDirectory.from_config(config).iterate_revisions(after, before))
    start = f"revision {before}" if before else "an empty database"
    plural = "" if steps == 1 else "s"
    return f"database migrated from {start} to revision {after} ({steps} migration{plural})"
