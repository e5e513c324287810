"""The README's Delivery walk-through with real processes: ``signoff serve`` on the
embedded default delivers an approved action to ``signoff receiver``, which verifies it."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from tests import zygote
from tests.conftest import PG_URL
from tests.helpers import CREATE_QUEUE, DECIDE, PAYMENT_SCHEMA, PROPOSE, REGISTER_TARGET
from tests.processes import ROOT, free_port, run_cli, serving, signoff_env
from tests.test_server import call, new_token


@pytest.fixture
def served_database(tmp_path: Path, database_url: str) -> str:
    """The serve process's database: a new SQLite file, or the test PostgreSQL one."""
    return database_url if PG_URL else f"sqlite:///{tmp_path / 'served.db'}"


@contextmanager
def receiving(port: int, secret: str) -> Iterator[IO[str]]:
    """``signoff receiver`` on ``port`` (a warm start, as ``serving`` makes the server's);
    yields its output once it accepts connections."""
    env = signoff_env("sqlite:///unused.db", SIGNOFF_RECEIVER_SECRET=secret)
    argv = [sys.executable, "-m", "signoff", "receiver", "--port", str(port)]
    with tempfile.NamedTemporaryFile(mode="w+") as output:
        process: subprocess.Popen[str] | zygote.WarmProcess | None
        process = zygote.spawn(argv, env=env, cwd=ROOT, stdout=Path(output.name))
        if process is None:
            process = subprocess.Popen(
                argv, env=env, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, text=True
            )
        try:
            for _ in range(100):
                with socket.socket() as sock:
                    if sock.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.1)
            yield output
        finally:
            process.terminate()
            process.wait(timeout=10)


def read(output: IO[str]) -> str:
    output.seek(0)
    return output.read()


def test_an_approved_action_arrives_at_the_demo_receiver(
    served_database: str, clean_database: None
) -> None:
    env = signoff_env(served_database)
    admin = new_token(env, "--name", "ops", "--role", "admin")
    port = free_port()
    with serving(env) as base:
        queue = call(base, admin, CREATE_QUEUE, {"input": {"slug": "payments", "name": "P"}})
        registered = call(
            base,
            admin,
            REGISTER_TARGET,
            {
                "input": {
                    "name": "refunds",
                    "url": f"http://127.0.0.1:{port}/refunds",
                    "inputSchema": PAYMENT_SCHEMA,
                    "queueId": queue["createQueue"]["id"],
                }
            },
        )["registerTarget"]
        agent = new_token(env, "--name", "bot", "--role", "agent")
        reviewer = new_token(env, "--name", "alice", "--role", "reviewer", "--queue", "payments")
        with receiving(port, registered["signingSecret"]) as output:
            proposal = call(
                base,
                agent,
                PROPOSE,
                {
                    "input": {
                        "targetId": registered["target"]["id"],
                        "actionCode": "refund.create",
                        "operationKey": "refund-42",
                        "payload": {"amount": 1200, "currency": "EUR"},
                    }
                },
            )["proposeAction"]["proposal"]
            call(
                base,
                reviewer,
                DECIDE,
                {
                    "input": {
                        "proposalId": proposal["id"],
                        "decision": "APPROVED",
                        "payloadDigest": proposal["payloadDigest"],
                    }
                },
            )
            for _ in range(100):
                if "signature verified" in read(output):
                    break
                time.sleep(0.1)
            printed = read(output)
        state = call(
            base, admin, "query($id: ID!) { proposal(id: $id) { state } }", {"id": proposal["id"]}
        )
    webhook_id = f"msg_{proposal['id']}"
    assert f"POST /refunds webhook-id={webhook_id} attempt=1 signature verified" in printed
    assert '"operation_key": "refund-42"' in printed
    assert '"amount": 1200' in printed
    assert registered["signingSecret"] not in printed
    assert state["proposal"]["state"] == "APPLIED"


def test_worker_without_redis_says_what_to_do(tmp_path: Path) -> None:
    result = run_cli("worker", env=signoff_env(f"sqlite:///{tmp_path / 'w.db'}"))
    assert result.returncode == 2
    assert "needs SIGNOFF_REDIS_URL" in result.stderr
