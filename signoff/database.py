"""Async engine, sessions, and the commit that runs after-commit hooks.

PostgreSQL sessions are pinned to READ COMMITTED, which the compare-and-set transitions
rely on. SQLite gets WAL, a busy timeout and ``BEGIN IMMEDIATE`` for writers, so writers
queue instead of failing. ``read_only(engine)`` sessions open no transaction, so a slow
reader never holds up a writer (docs/design.md section 12, SQLite and PostgreSQL).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sqlite3
import time
from typing import Any

from sqlalchemy import Text, event, text
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import GenericFunction
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import jsoncodec, sqlite_driver
from signoff.outages import Outage

logger = logging.getLogger("signoff.database")

SessionMaker = async_sessionmaker[AsyncSession]

SQLITE_BUSY_TIMEOUT_MS = 30_000
# Connections a process keeps open to its database; twice as many more may open
# for a moment when more work asks at once, and close as they are given back.
POOL_SIZE = 10
# How long opening a PostgreSQL connection may take before the database counts as
# unreachable (a host that drops packets would otherwise hold a request for minutes).
CONNECT_TIMEOUT_SECONDS = 5
# A pooled connection unused for longer than this is pinged before its next use.
PING_AFTER_IDLE_SECONDS = 1.0
_IDLE_SINCE = "signoff_idle_since"
# A connection's record: how many database outages had ended when it was opened.
_OUTAGES_ENDED = "signoff_outages_ended"
# What the compare-and-set transitions assume (docs/design.md section 12, PostgreSQL).
POSTGRES_ISOLATION_LEVEL = "READ COMMITTED"
# An execution option: connections of ``read_only(engine)`` carry it.
READ_ONLY = "signoff_read_only"


def create_engine(
    url: str, *, pool_size: int = POOL_SIZE, busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS
) -> AsyncEngine:
    """Create the engine for ``url``; parameters never appear in error messages.

    ``busy_timeout_ms``: how long a SQLite writer waits for the write lock before the
    request is refused with ``DATABASE_BUSY``.
    """
    pool = {"pool_size": pool_size, "max_overflow": pool_size * 2}
    if url.startswith("sqlite"):
        if make_url(url).database in (None, "", ":memory:"):
            pool = {}  # one connection holds the database (SQLAlchemy's StaticPool)
        engine = create_async_engine(
            url,
            module=sqlite_driver.dbapi(),
            hide_parameters=True,
            json_deserializer=jsoncodec.loads,
            connect_args={"timeout": busy_timeout_ms / 1000},
            **pool,
        )
        _configure_sqlite(engine, busy_timeout_ms)
    else:
        engine = create_async_engine(
            url,
            hide_parameters=True,
            json_deserializer=jsoncodec.loads,
            # psycopg takes the bytes as they are; SQLite's driver would store them as a blob.
            json_serializer=jsoncodec.dumps,
            **pool,
            isolation_level=POSTGRES_ISOLATION_LEVEL,
            # A read session's connection is in autocommit (``read_only``): there is no
            # transaction for its close to roll back, and the rollback cost a trip through
            # psycopg's wait on every request that read.
            skip_autocommit_rollback=True,
            connect_args={"connect_timeout": CONNECT_TIMEOUT_SECONDS},
        )
        _sessions_in_utc(engine)
        # Several rows of one table (a transaction's audit records and change events) go
        # in as one multi-row INSERT, as SQLAlchemy's psycopg2 dialect does, rather than
        # psycopg 3's pipelined executemany: one statement, cheaper on both sides.
        engine.sync_engine.dialect.use_insertmanyvalues_wo_returning = True
        _ping_idle_connections(engine)
    _watch_outages(engine)
    return engine


def _sessions_in_utc(engine: AsyncEngine) -> None:
    """Set each new connection's session time zone to UTC: psycopg then loads timestamptz
    values as UTC datetimes, which the records' reads take as they are
    (``signoff.models.records``). Nothing in SQL depends on the session's time zone (every
    stored time is a timestamptz, compared as an instant). A ``SET`` once per connection
    rather than a startup ``options`` parameter, which PgBouncer refuses."""

    @event.listens_for(engine.sync_engine, "connect", insert=True)
    def set_utc(dbapi_connection: Any, _record: Any) -> None:
        # In autocommit, so that no rollback of the pool's takes the setting back.
        autocommit = dbapi_connection.autocommit
        dbapi_connection.autocommit = True
        cursor = dbapi_connection.cursor()
        cursor.execute("SET TIME ZONE 'UTC'")
        cursor.close()
        dbapi_connection.autocommit = autocommit


def _ping_idle_connections(engine: AsyncEngine) -> None:
    """Ping a pooled connection before use when it sat unused for a while, and replace it if it
    is dead (a database restart, an idle timeout on the way). ``pool_pre_ping`` pings on
    every checkout, but a connection in steady use has just shown that it works: only one
    idle past ``PING_AFTER_IDLE_SECONDS`` is pinged (as PgBouncer's ``server_check_delay``)."""

    @event.listens_for(engine.sync_engine, "checkin")
    def on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get(_IDLE_SINCE)
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_SECONDS:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as dead:
            # The pool drops this connection and checks out another (a new one if need be).
            raise DisconnectionError("a pooled connection no longer answers") from dead


def _watch_outages(engine: AsyncEngine) -> None:
    """Log a lost database once (``signoff.outages``), and its return once.

    Not outages: a stale pooled connection that the idle ping replaces (nothing failed),
    a connection opened before an outage that has ended since, failing when next used
    (one held through it): that is the old outage showing, and the database answers; and
    a database the server does not have, which no retry brings back.
    """
    outage = Outage("database")

    @event.listens_for(engine.sync_engine, "handle_error")
    def on_error(context: ExceptionContext) -> None:
        if context.is_pre_ping or _opened_before_the_last_outage_ended(context, outage):
            return
        failure = context.sqlalchemy_exception or context.original_exception
        condition = database_condition(failure)
        # A missing database does not come back by itself: someone has to create it, and
        # whoever asked (a command, a request) says so; it is no outage to wait out.
        if is_unreachable(failure) and condition != DATABASE_MISSING:
            outage.failed(condition or type(context.original_exception).__name__)

    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(_dbapi_connection: Any, record: Any) -> None:
        outage.answered()
        record.info[_OUTAGES_ENDED] = outage.ended


def _opened_before_the_last_outage_ended(context: ExceptionContext, outage: Outage) -> bool:
    connection = context.connection
    # Without a DBAPI connection (a failed connect), reading ``info`` would reconnect.
    if connection is None or connection.closed or connection.invalidated:
        return False
    ended_then: int = connection.info.get(_OUTAGES_ENDED, outage.ended)
    return ended_then < outage.ended


def _configure_sqlite(engine: AsyncEngine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()
        dbapi_connection.create_function(
            SearchableText.name, 1, _searchable_text, deterministic=True
        )

    @event.listens_for(engine.sync_engine, "begin")
    def on_begin(conn: Any) -> None:
        # A read-only connection sends no BEGIN: each of its statements reads in its own
        # implicit transaction (a WAL snapshot), as PostgreSQL's autocommit reads do.
        if not conn.get_execution_options().get(READ_ONLY, False):
            conn.exec_driver_sql("BEGIN IMMEDIATE")


class SearchableText(GenericFunction[str]):
    """A JSON column as lower-case text to search with LIKE, the same on both databases:
    PostgreSQL's ``lower(CAST(x AS TEXT))``; on SQLite a function of this module, since
    SQLite keeps JSON with non-ASCII letters escaped (``\\u00e9``) and its ``lower()``
    folds A-Z only."""

    type = Text()
    name = "signoff_searchable_text"
    inherit_cache = True


@compiles(SearchableText, "postgresql")
def _searchable_on_postgresql(element: SearchableText, compiler: Any, **kw: Any) -> str:
    return f"lower(CAST({compiler.process(element.clauses, **kw)} AS TEXT))"


def _searchable_text(value: object) -> str | None:
    """SQLite's side of :class:`SearchableText`: the JSON written as PostgreSQL writes
    ``jsonb`` as text (letters as they are, ``", "`` and ``": "``), lower-cased."""
    if value is None:
        return None
    return json.dumps(jsoncodec.loads(str(value)), ensure_ascii=False).lower()


def read_only(engine: AsyncEngine) -> AsyncEngine:
    """The same engine and pool, for work that only reads (queries, subscription frames).
    Each statement reads its own snapshot, with no transaction around it: two round trips
    fewer, and on SQLite it never waits for nor holds the write lock. Code that needs one
    snapshot across statements uses a write session."""
    if engine.dialect.name != "sqlite":
        return engine.execution_options(isolation_level="AUTOCOMMIT")
    return engine.execution_options(**{READ_ONLY: True})


def create_sessionmaker(engine: AsyncEngine) -> SessionMaker:
    """Sessions for ``engine``; business rules reach services through their unit of work
    (``signoff.resolvers.core.work``), never through the session."""
    return async_sessionmaker(engine, class_=AsyncSession, expire_on_commit=False)


DATABASE_LOCKED = "database is locked"
# Every pooled connection stayed in use for the pool's whole timeout: this process asked
# more of the database at once than it can answer, which passes like a lock does.
POOL_EXHAUSTED = "no pooled connection free in time"
# PostgreSQL has no database of the URL's name (invalid_catalog_name): someone has to create
# it. The server refuses the connection before a session exists, so libpq hands psycopg
# no SQLSTATE, only the server's message.
DATABASE_MISSING = "database does not exist"
_PG_DATABASE_MISSING = "3D000"
_PG_DATABASE_MISSING_MESSAGE = re.compile(r'FATAL:\s+database "[^"]*" does not exist')
# PostgreSQL conditions that mean "wait and retry": lock_not_available, deadlock_detected,
# serialization_failure, query_canceled (statement or lock timeout).
_PG_BUSY_SQLSTATES = frozenset({"55P03", "40P01", "40001", "57014"})


def database_condition(exc: BaseException) -> str | None:
    """What went wrong in the database, safe to log: never the error's message (SQL, values).

    SQLite's busy and locked errors read "database is locked"; other SQLite errors give
    their result code name; PostgreSQL errors give their SQLSTATE, or
    ``DATABASE_MISSING`` for a database the server does not have.
    """
    if isinstance(exc, PoolTimeout):
        return POOL_EXHAUSTED
    original = getattr(exc, "orig", None) or exc
    name = getattr(original, "sqlite_errorname", None)
    if isinstance(name, str):
        return DATABASE_LOCKED if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) else name
    sqlstate = getattr(original, "sqlstate", None)
    if sqlstate == _PG_DATABASE_MISSING or (
        sqlstate is None and _PG_DATABASE_MISSING_MESSAGE.search(str(original))
    ):
        return DATABASE_MISSING
    if isinstance(sqlstate, str):
        return f"SQLSTATE {sqlstate}"
    return None


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` means the database was busy (locked, or every pooled connection in
    use), not broken or unreachable."""
    condition = database_condition(exc)
    return condition in (DATABASE_LOCKED, POOL_EXHAUSTED) or (
        condition is not None and condition.removeprefix("SQLSTATE ") in _PG_BUSY_SQLSTATES
    )


# PostgreSQL conditions that mean "the server is not there": the connection exceptions
# (class 08) and the server shutting down or starting up (admin_shutdown, crash_shutdown,
# cannot_connect_now).
_PG_UNREACHABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})


def is_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` means the database could not be reached (down, restarting, the
    connection lost), as opposed to a refused statement or a bug."""
    if isinstance(exc, OSError):
        return True
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if not isinstance(exc, OperationalError | InterfaceError):
        return False
    condition = database_condition(exc)
    # A missing database is a setup mistake, but to a running process it is as absent as
    # a stopped server: requests answer SERVICE_UNAVAILABLE until it is back.
    if condition is None or condition == DATABASE_MISSING:
        return True  # None: the driver failed before the server said anything
    sqlstate = condition.removeprefix("SQLSTATE ")
    return sqlstate.startswith("08") or sqlstate in _PG_UNREACHABLE_SQLSTATES


READY = "ok"
BUSY = "busy"
UNREACHABLE = "unreachable"
READY_TIMEOUT_SECONDS = 5.0
# How long the readiness probe waits for SQLite's write lock before calling it busy.
SQLITE_WRITE_PROBE_SECONDS = 1.0


async def readiness(engine: AsyncEngine) -> str:
    """``ok``, ``busy`` (answers, but a lock or the pool is held too long) or ``unreachable``.

    On SQLite a writer may hold the write lock while reads still answer; the probe
    also takes the write lock for an instant, so a lock held for longer than a second
    reads as busy rather than as a broken database.
    """
    try:
        async with asyncio.timeout(READY_TIMEOUT_SECONDS):
            async with read_only(engine).connect() as conn:
                await conn.execute(text("SELECT 1"))
    except TimeoutError:
        return BUSY
    except Exception as exc:
        if is_unreachable(exc):
            # An outage is logged once, by the engine's watch; a missing database is not.
            return UNREACHABLE
        logger.warning("readiness check failed: %s", database_condition(exc) or type(exc).__name__)
        return BUSY if is_busy(exc) else UNREACHABLE
    path = engine.url.database if engine.dialect.name == "sqlite" else None
    on_disk = path is not None and path not in {"", ":memory:"}
    if on_disk and not await asyncio.to_thread(
        sqlite_can_write, str(path), within=SQLITE_WRITE_PROBE_SECONDS
    ):
        logger.warning("readiness check: %s", DATABASE_LOCKED)
        return BUSY
    return READY


def sqlite_can_write(path: str, *, within: float) -> bool:
    """Whether another connection can take SQLite's write lock (``BEGIN IMMEDIATE``) in time."""
    connection = sqlite3.connect(path, timeout=within, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        connection.close()
