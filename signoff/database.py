"""Async engine, sessions, and the commit that runs after-commit hooks.

SQLite (embedded default) gets WAL, a busy timeout and ``BEGIN IMMEDIATE`` so that
concurrent writers queue up instead of failing with "database is locked" when a
read lock cannot be upgraded.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlmodel.ext.asyncio.session import AsyncSession

logger = logging.getLogger("signoff.database")

AfterCommit = Callable[[], Awaitable[None]]
SessionMaker = async_sessionmaker[AsyncSession]

SQLITE_BUSY_TIMEOUT_MS = 30_000


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    """Create the engine for ``url``; parameters never appear in error messages."""
    if url.startswith("sqlite"):
        engine = create_async_engine(
            url, hide_parameters=True, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        )
        _configure_sqlite(engine)
        return engine
    return create_async_engine(
        url,
        hide_parameters=True,
        pool_size=pool_size,
        max_overflow=pool_size * 2,
        pool_pre_ping=True,
    )


def _configure_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def create_sessionmaker(engine: AsyncEngine, **services: Any) -> SessionMaker:
    """Sessions for ``engine``; ``services`` (the job queue, the event hub) reach resolvers
    through ``session.info``, so business rules can schedule work without globals."""
    return async_sessionmaker(
        engine, class_=AsyncSession, expire_on_commit=False, info=dict(services)
    )


def after_commit(session: AsyncSession, hook: AfterCommit) -> None:
    """Run ``hook`` once the session's current transaction has committed."""
    session.info.setdefault("after_commit", []).append(hook)


async def commit(session: AsyncSession) -> None:
    """Commit, then run the after-commit hooks; a failing hook is logged, never raised.

    Hooks only speed things up (enqueue a job, publish an event): the database is
    the source of truth and periodic sweeps repair anything a hook failed to do.
    """
    hooks: list[AfterCommit] = session.info.pop("after_commit", [])
    await session.commit()
    for hook in hooks:
        try:
            await hook()
        except Exception as exc:
            logger.warning("after-commit hook failed: %s", type(exc).__name__)


async def rollback(session: AsyncSession) -> None:
    session.info.pop("after_commit", None)
    await session.rollback()
