"""Shared fixtures: a migrated database (SQLite, or PostgreSQL when
``SIGNOFF_TEST_DATABASE_URL`` is set), the ASGI app, an HTTP client and a GraphQL helper.

Each test starts from empty tables; nothing depends on another test's rows.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from httpx import ASGITransport, AsyncClient
from playwright.async_api import Browser
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import SQLModel
from starlette.applications import Starlette

from signoff import clock
from signoff.config import Settings, normalise_database_url
from signoff.database import SessionMaker, create_engine, create_sessionmaker
from signoff.migrate import migrate
from signoff.web.app import create_app
from tests import zygote
from tests.browser import chromium
from tests.helpers import GraphQLClient
from tests.live import Server, start_server
from tests.processes import LOOPBACK_NETWORKS
from tests.redis_keys import delete_under, unique_channel, unique_queue

# One sealing key for the test run and every process it starts (they inherit it), so
# that no test writes a key file into the working tree.
os.environ.setdefault("SIGNOFF_SECRET_KEY", "c2lnbm9mZi10ZXN0LWtleS0zMi1ieXRlcy1sb25nISE=")
# Likewise one key that signs the audit log's checkpoints.
os.environ.setdefault("SIGNOFF_AUDIT_SIGNING_KEY", "c2lnbm9mZi1hdWRpdC1zaWduaW5nLWtleS0zMi1ieXQ=")

PG_URL = os.environ.get("SIGNOFF_TEST_DATABASE_URL")
# Under pytest-xdist (``make test`` runs it) each worker is a process of its own: its
# PostgreSQL databases carry its name ("gw0", ...), like its Redis prefix
# (``tests/redis_keys.py``); SQLite files are in its own temporary directories.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
REDIS_URL = os.environ.get("SIGNOFF_TEST_REDIS_URL")

requires_postgres = pytest.mark.skipif(PG_URL is None, reason="needs SIGNOFF_TEST_DATABASE_URL")
requires_redis = pytest.mark.skipif(REDIS_URL is None, reason="needs SIGNOFF_TEST_REDIS_URL")
# For a module whose subject is the same on every database and event transport (the
# console's views, the agent frameworks' recipes, the MCP server, the test harness): CI's
# PostgreSQL + Redis pass would only repeat it. It runs on the SQLite pass, the README's
# default, so that `make test` on a fresh machine runs it; the server paths it goes
# through are tested on both databases by the tests of those paths.
checked_once = pytest.mark.skipif(PG_URL is not None, reason="checked once, on the SQLite pass")


def pytest_report_header() -> str:
    return f"signoff database: {'PostgreSQL' if PG_URL else 'SQLite'}; redis: {REDIS_URL or 'none'}"


@pytest.fixture(scope="session", autouse=True)
def redis_left_clean() -> Iterator[None]:
    """The run leaves nothing in the shared Redis: at the end, every key under its own
    prefix (``tests/redis_keys.py``) is deleted, and the run fails if any remains."""
    yield
    if REDIS_URL is not None:
        remaining = delete_under(REDIS_URL)
        assert not remaining, f"keys left in Redis: {sorted(remaining)[:10]}"


@pytest.fixture(scope="session", autouse=True)
def warm_starts() -> Iterator[None]:
    """The worker's zygote of ``signoff`` processes (``tests/zygote.py``) ends with it."""
    yield
    zygote.stop_zygote()


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    """One headless Chromium per pytest-xdist worker, launched for its first page test.
    Each test opens a context of its own (cookies, storage, routes, pages) and closes it,
    so tests share only the process; one per module cost a launch each."""
    async with chromium() as launched:
        yield launched


@pytest.fixture(scope="session", autouse=True)
def migrated_template_dropped() -> Iterator[None]:
    """The worker's migrated database that ``migrated_database`` copies goes with it."""
    yield
    drop_migrated_template()


@contextlib.contextmanager
def fresh_database(directory: Path, *, template: str | None = None) -> Iterator[str]:
    """The URL of a new, empty database (a SQLite file in ``directory``), dropped after; on
    PostgreSQL a copy of the database named ``template`` when one is named."""
    if PG_URL is None:
        yield f"sqlite+aiosqlite:///{directory / 'signoff.db'}"
        return
    url = _create_postgresql_database(
        f"signoff_test_{XDIST_WORKER}_{uuid.uuid4().hex[:10]}", template
    )
    try:
        yield url
    finally:  # also when the caller's setup inside the ``with`` fails
        _drop_postgresql_database(url)


def _postgresql_admin(statement: str) -> None:
    """Run ``statement`` on the test server's own database (CREATE and DROP DATABASE)."""
    assert PG_URL is not None
    base = make_url(normalise_database_url(PG_URL))
    admin = base.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(statement)


def _create_postgresql_database(name: str, template: str | None = None) -> str:
    """A new database on the test server (a copy of ``template`` if named); its URL."""
    _postgresql_admin(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    assert PG_URL is not None
    base = make_url(normalise_database_url(PG_URL))
    return base.set(database=name).render_as_string(hide_password=False)


def _drop_postgresql_database(url: str) -> None:
    _postgresql_admin(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')


# This worker's migrated database (a PostgreSQL database, or a SQLite file), made at the
# first ``migrated_database`` and dropped at the worker's end (``migrated_template_dropped``).
_migrated: str | None = None
_migrated_directory: Path | None = None


def _migrated_template() -> str:
    """The URL of this worker's migrated database, which ``migrated_database`` copies."""
    global _migrated, _migrated_directory
    if _migrated is None:
        _migrated_directory = Path(tempfile.mkdtemp(prefix=f"signoff-migrated-{XDIST_WORKER}-"))
        if PG_URL is None:
            url = f"sqlite+aiosqlite:///{_migrated_directory / 'signoff.db'}"
        else:
            name = f"signoff_test_{XDIST_WORKER}_migrated_{uuid.uuid4().hex[:10]}"
            url = _create_postgresql_database(name)
        _migrated = url

        async def upgrade() -> None:
            engine = create_engine(url)
            try:
                await migrate(engine)
            finally:
                await engine.dispose()  # no connection left: PostgreSQL copies only then

        # In a thread of its own: the caller may be inside a running event loop.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, upgrade()).result()
    return _migrated


def drop_migrated_template() -> None:
    if _migrated is not None and PG_URL is not None:
        _drop_postgresql_database(_migrated)
    if _migrated_directory is not None:
        shutil.rmtree(_migrated_directory, ignore_errors=True)


@contextlib.contextmanager
def migrated_database(directory: Path) -> Iterator[str]:
    """As ``fresh_database``, with every migration applied: a copy of one database per
    worker that ``signoff.migrate`` upgraded (``CREATE DATABASE ... TEMPLATE`` on
    PostgreSQL, SQLite's backup of the file), as migrating each took seconds."""
    template = _migrated_template()
    if PG_URL is None:
        target = directory / "signoff.db"
        source = sqlite3.connect(make_url(template).database or "")
        copy = sqlite3.connect(target)
        try:
            source.backup(copy)
        finally:
            copy.close()
            source.close()
        yield f"sqlite+aiosqlite:///{target}"
        return
    with fresh_database(directory, template=make_url(template).database) as url:
        yield url


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh database for this test run, dropped afterwards."""
    with fresh_database(tmp_path_factory.mktemp("db")) as url:
        yield url


@pytest.fixture(scope="session")
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url, pool_size=30)
    await migrate(engine)
    yield engine
    await engine.dispose()


@pytest.fixture
async def clean_database(engine: AsyncEngine) -> AsyncIterator[None]:
    yield
    async with engine.begin() as conn:
        for table in reversed(SQLModel.metadata.sorted_tables):
            await conn.execute(text(f'DELETE FROM "{table.name}"'))


@pytest.fixture
def sessionmaker(engine: AsyncEngine, clean_database: None) -> SessionMaker:
    return create_sessionmaker(engine)


@pytest.fixture
def settings(database_url: str) -> Settings:
    """The app without its embedded delivery worker: approved proposals stay QUEUED unless a
    test delivers them (``tests/jobs``) or asks for the worker (``embedded_worker=True``)."""
    return Settings(
        database_url=database_url,
        embedded_worker=False,
        secret_key=os.environ["SIGNOFF_SECRET_KEY"],
        audit_signing_key=os.environ["SIGNOFF_AUDIT_SIGNING_KEY"],
        delivery_allow_networks=LOOPBACK_NETWORKS,
    )


@pytest.fixture
async def app(settings: Settings, clean_database: None) -> AsyncIterator[Starlette]:
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://signoff.test") as c:
        yield c


@pytest.fixture
def gql(client: AsyncClient, app: Starlette) -> GraphQLClient:
    return GraphQLClient(client, create_sessionmaker(app.state.engine))


@pytest.fixture
def frozen_clock() -> Iterator[clock.FrozenClock]:
    """Freeze ``signoff.clock.now``; advance it to test leases and expiry without sleeping."""
    frozen = clock.FrozenClock()
    clock.set_clock(frozen)
    yield frozen
    clock.set_clock(None)


def server_env(**env: str) -> dict[str, str]:
    """The environment of a test's ``signoff serve``, with ``env`` over it."""
    # These servers test the API and its events: nothing delivers their approved
    # proposals, in-process or through a queue shared with other test runs.
    env = {"SIGNOFF_EMBEDDED_WORKER": "0", **env}
    if REDIS_URL is not None:  # with Redis configured, every server uses it
        env = {
            "SIGNOFF_REDIS_URL": REDIS_URL,
            "SIGNOFF_EVENTS_CHANNEL": unique_channel(),
            "SIGNOFF_ARQ_QUEUE": unique_queue(),
            **env,
        }
    return env


@pytest.fixture
async def serve(
    database_url: str, clean_database: None, tmp_path: Path
) -> AsyncIterator[Callable[..., Awaitable[Server]]]:
    """Start ``signoff serve`` processes on this run's database; all stop after the test."""
    servers: list[Server] = []

    async def start(**env: str) -> Server:
        server = await start_server(database_url, tmp_path, **server_env(**env))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="module")
async def shared_server(
    database_url: str, engine: AsyncEngine, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Server]:
    """One ``signoff serve`` (as ``serve()`` starts it) for those tests of a module that
    write nothing and keep no state on the server, such as a connection refused at the
    door: a process start each saved. It stops after the module's last test (on each
    pytest-xdist worker that ran one)."""
    server = await start_server(database_url, tmp_path_factory.mktemp("server"), **server_env())
    yield server
    server.stop()


@dataclass(frozen=True)
class ModuleServer:
    """A ``signoff serve`` on a database of its own, and a way into that database."""

    server: Server
    sessionmaker: SessionMaker
    database_url: str


@contextlib.asynccontextmanager
async def server_on_its_own_database(directory: Path, **env: str) -> AsyncIterator[ModuleServer]:
    """A ``signoff serve`` (as ``serve()`` starts it, ``env`` over its environment) on a
    fresh database that no test cleans; both go on the way out."""
    with migrated_database(directory) as url:
        engine = create_engine(url)
        try:
            server = await start_server(url, directory, **server_env(**env))
            try:
                yield ModuleServer(server, create_sessionmaker(engine), url)
            finally:
                server.stop()
        finally:
            await engine.dispose()


@pytest.fixture(scope="module")
async def module_server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ModuleServer]:
    """One server for the tests of a module that each build a world of their own (their
    own queue, target and reviewer names) and so never see each other's: a process start
    each saved. It stops, and its database goes, after the module's last test."""
    async with server_on_its_own_database(tmp_path_factory.mktemp("module-server")) as shared:
        yield shared
