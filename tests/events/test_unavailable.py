"""A websocket that cannot be authenticated because the database is down is told to come
back (1013), not that its token is bad (4403), and the server recovers by itself."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from signoff.constants import WS_CLOSE_TRY_AGAIN
from signoff.database import create_engine, create_sessionmaker
from signoff.models import Role
from signoff.resolvers.access.actors import create_token
from signoff.resolvers.core.work import UnitOfWork
from tests.conftest import fresh_database, requires_postgres
from tests.live import TRANSPORT_WS, open_transport_ws, server_log_on_failure, start_server

pytestmark = requires_postgres


def _admin(url: str) -> tuple[str, str]:
    """A libpq URL of the server's maintenance database, and the test database's name."""
    parsed = make_url(url)
    assert parsed.database is not None
    admin = parsed.set(drivername="postgresql", database="postgres")
    return admin.render_as_string(hide_password=False), parsed.database


def _cut_off(admin: str, name: str, *, allow: bool) -> None:
    """Refuse (or allow again) new connections to ``name``, and end the open ones."""
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS {str(allow).lower()}')
        if not allow:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )


async def _token(url: str) -> str:
    engine = create_engine(url)
    try:
        async with create_sessionmaker(engine)() as session:
            created = await create_token(work=UnitOfWork(session), name="ops", role=Role.OPERATOR)
        return created.token
    finally:
        await engine.dispose()


async def _close_code_of_init(ws_url: str, token: str) -> int | None:
    async with connect(ws_url, subprotocols=[TRANSPORT_WS], open_timeout=10) as ws:
        init = {"authorization": f"Bearer {token}"}
        await ws.send(json.dumps({"type": "connection_init", "payload": init}))
        try:
            async with asyncio.timeout(15):
                while True:
                    await ws.recv()
        except ConnectionClosed:
            pass
        return ws.close_code


async def test_an_unreachable_database_closes_with_try_again_and_recovers(
    tmp_path: Path,
) -> None:
    with fresh_database(tmp_path) as url:
        server = await start_server(url, tmp_path, SIGNOFF_EMBEDDED_WORKER="0")
        admin, name = _admin(url)
        try:
            with server_log_on_failure(server):
                token = await _token(url)
                await asyncio.to_thread(_cut_off, admin, name, allow=False)
                try:
                    code = await _close_code_of_init(server.ws_url, token)
                finally:
                    await asyncio.to_thread(_cut_off, admin, name, allow=True)
                assert code == WS_CLOSE_TRY_AGAIN
                ws = await open_transport_ws(server.ws_url, {"authorization": f"Bearer {token}"})
                await ws.close()
                log = server.log.read_text()
                assert "database unreachable" in log  # once, by the engine: not per socket
                assert "Traceback" not in log and "SELECT" not in log
        finally:
            server.stop()
