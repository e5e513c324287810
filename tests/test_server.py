"""A real ``signoff serve`` process, tokens made with the CLI, the flow over real HTTP."""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.conftest import PG_URL, requires_postgres
from tests.helpers import CLAIM, CREATE_QUEUE, DECIDE, PAYMENT_SCHEMA, PROPOSE, REGISTER_TARGET
from tests.processes import run_cli, serving, signoff_env


def new_token(env: dict[str, str], *args: str) -> str:
    result = run_cli("token", "create", *args, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def call(base: str, token: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(
        f"{base}/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    body: dict[str, Any] = response.json()
    assert not body.get("errors"), body
    data: dict[str, Any] = body["data"]
    return data


@pytest.fixture
def server_database(tmp_path: Any, database_url: str) -> str:
    """The serve process gets a database of its own: a new SQLite file, or the test PG one."""
    return database_url if PG_URL else f"sqlite:///{tmp_path / 'served.db'}"


def test_the_flow_against_a_real_server(server_database: str, clean_database: None) -> None:
    env = signoff_env(server_database)
    admin = new_token(env, "--name", "ops", "--role", "admin")
    with serving(env) as base:
        assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}
        page = httpx.get(f"{base}/graphql", headers={"Accept": "text/html"})
        assert page.status_code == 200 and "graphiql" in page.text.lower()

        queue = call(
            base, admin, CREATE_QUEUE, {"input": {"slug": "payments", "name": "Payments"}}
        )["createQueue"]
        target = call(
            base,
            admin,
            REGISTER_TARGET,
            {
                "input": {
                    "name": "refunds",
                    "url": "http://127.0.0.1:9/hook",
                    "inputSchema": PAYMENT_SCHEMA,
                    "approvalMode": "HUMAN",
                    "queueId": queue["id"],
                }
            },
        )["registerTarget"]["target"]
        agent = new_token(env, "--name", "bot", "--role", "agent")
        reviewer = new_token(env, "--name", "alice", "--role", "reviewer", "--queue", "payments")

        proposed = call(
            base,
            agent,
            PROPOSE,
            {
                "input": {
                    "targetId": target["id"],
                    "actionCode": "refund.create",
                    "operationKey": "r-1",
                    "payload": {"amount": 1200, "currency": "EUR"},
                }
            },
        )["proposeAction"]
        call(base, reviewer, CLAIM, {"id": proposed["task"]["id"]})
        decided = call(
            base,
            reviewer,
            DECIDE,
            {
                "input": {
                    "proposalId": proposed["proposal"]["id"],
                    "decision": "APPROVED",
                    "payloadDigest": proposed["proposal"]["payloadDigest"],
                }
            },
        )["decideProposal"]
        assert decided["proposal"]["state"] == "QUEUED"
        assert decided["approval"]["approver"]["name"] == "alice"

        too_big = httpx.post(
            f"{base}/graphql",
            content=b"x" * 2_000_000,
            headers={"content-type": "application/json"},
        )
        assert too_big.status_code == 413
        assert too_big.json()["errors"][0]["extensions"]["code"] == "REQUEST_TOO_LARGE"


def test_token_create_refuses_an_unknown_queue_cleanly(
    server_database: str, clean_database: None
) -> None:
    result = run_cli(
        "token",
        "create",
        "--name",
        "bob",
        "--role",
        "reviewer",
        "--queue",
        "nowhere",
        env=signoff_env(server_database),
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "error: No queue with slug nowhere."
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections for the whole test: bound here and never
    listened on, so no other test's server can take it meanwhile."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


@pytest.fixture
def not_redis() -> Iterator[int]:
    """A loopback port where something that is not Redis answers (an HTTP server's refusal)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.2)
        stop = threading.Event()

        def answer() -> None:
            while not stop.is_set():
                try:
                    connection, _ = server.accept()
                except TimeoutError:
                    continue
                with connection:
                    connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

        answering = threading.Thread(target=answer, daemon=True)
        answering.start()
        yield int(server.getsockname()[1])
        stop.set()
        answering.join()


@pytest.mark.parametrize(
    ("command", "database", "redis", "says"),
    [
        (
            "serve",
            "postgresql://postgres:hunter2@127.0.0.1:{port}/signoff",
            None,
            "error: cannot reach the database at postgresql+psycopg://postgres:***@127.0.0.1:",
        ),
        (
            "migrate",
            "sqlite+aiosqlite:///{tmp}/no/such/folder/signoff.db",
            None,
            "folder",
        ),
        (
            "worker",
            "sqlite+aiosqlite:///{tmp}/signoff.db",
            "redis://:hunter2@127.0.0.1:{port}/0",
            "error: cannot reach Redis at redis://:***@127.0.0.1:",
        ),
    ],
)
def test_a_service_that_is_not_there_is_named_in_one_line(
    tmp_path: Any, closed_port: int, command: str, database: str, redis: str | None, says: str
) -> None:
    port = closed_port
    extra = {"SIGNOFF_REDIS_URL": redis.format(port=port)} if redis else {}
    env = signoff_env(database.format(port=port, tmp=tmp_path), **extra)
    result = run_cli(command, env=env)
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and says in last, result.stderr
    assert "Traceback" not in result.stderr and "hunter2" not in result.stderr


def test_a_port_where_something_else_answers_is_named_in_one_line(
    tmp_path: Any, not_redis: int
) -> None:
    env = signoff_env(
        f"sqlite+aiosqlite:///{tmp_path}/signoff.db",
        SIGNOFF_REDIS_URL=f"redis://:hunter2@127.0.0.1:{not_redis}/0",
    )
    result = run_cli("worker", env=env)
    assert result.returncode == 2, result.stderr
    [last] = result.stderr.strip().splitlines()[-1:]
    assert last.startswith(f"error: something answered at redis://:***@127.0.0.1:{not_redis}/0")
    assert "not as Redis does" in last, result.stderr
    assert "Traceback" not in result.stderr and "hunter2" not in result.stderr


@requires_postgres
@pytest.mark.parametrize(
    "command", [["migrate"], ["serve"], ["token", "create", "--name", "bot", "--role", "agent"]]
)
def test_a_missing_postgresql_database_is_named_with_how_to_create_it(command: list[str]) -> None:
    """Only the error is said: a missing database is not an outage that passes by itself,
    so no "retrying by itself" line comes before it."""
    assert PG_URL is not None
    name = f"signoff_missing_{uuid.uuid4().hex[:8]}"
    url = make_url(PG_URL).set(database=name)
    result = run_cli(*command, env=signoff_env(url.render_as_string(hide_password=False)))
    assert result.returncode == 2
    assert "retrying" not in result.stderr, result.stderr
    [last] = result.stderr.strip().splitlines()
    assert last.startswith(f"error: the database '{name}' does not exist"), result.stderr
    assert f"createdb -h {url.host} -p {url.port}" in last and f" {name}`" in last
    assert f'CREATE DATABASE "{name}";' in last
    assert "cannot reach" not in result.stderr and "Traceback" not in result.stderr
