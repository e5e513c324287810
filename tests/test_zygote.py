"""A warm start (``tests/zygote.py``) behaves as a start from nothing: the same exit
status, output and errors for the same command, and a server that serves, takes its
signals and reports how it ended."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests import zygote
from tests.conftest import checked_once
from tests.processes import free_port, run_cli, signoff_env

pytestmark = checked_once

COMMANDS = [
    ("token", "create", "--name", "ada", "--role", "reviewer"),  # a token, once
    ("token", "create", "--name", "ada", "--role", "admin"),  # refused: another role
    ("token", "revoke"),  # argparse's refusal, status 2
    ("token", "revoke", "--token", "-"),  # the token read from stdin, not found
    ("schema",),
]


def cold(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "signoff", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def same_shape(text: str) -> str:
    """The output without what differs between any two runs (a token, an id)."""
    return " ".join(
        "<token>" if word.startswith("so_") else "<id>" if word.count("-") == 4 else word
        for word in text.split()
    )


@pytest.mark.skipif(not zygote.ENABLED, reason="warm starts are off")
def test_a_warm_command_answers_as_a_cold_one(tmp_path: Path) -> None:
    warm_env = signoff_env(f"sqlite+aiosqlite:///{tmp_path / 'warm.db'}")
    cold_env = signoff_env(f"sqlite+aiosqlite:///{tmp_path / 'cold.db'}")
    for args in COMMANDS:
        stdin = "so_not-a-real-token\n" if "-" in args else ""
        warm = run_cli(*args, env=warm_env, stdin=stdin)
        reference = cold(*args, env=cold_env, stdin=stdin)
        assert warm.returncode == reference.returncode, args
        assert same_shape(warm.stdout) == same_shape(reference.stdout), args
        assert same_shape(warm.stderr) == same_shape(reference.stderr), args


@pytest.mark.skipif(not zygote.ENABLED, reason="warm starts are off")
def test_a_warm_server_serves_and_ends_as_a_signal_ends_it(tmp_path: Path) -> None:
    port = free_port()
    env = signoff_env(f"sqlite+aiosqlite:///{tmp_path / 'served.db'}")
    log = tmp_path / "serve.log"
    process = zygote.spawn(
        [sys.executable, "-m", "signoff", "serve", "--port", str(port)], env=env, stdout=log
    )
    assert process is not None
    try:
        for _ in range(300):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, log.read_text()
            time.sleep(0.05)
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        # uvicorn finishes, then ends by the signal it was sent, as a cold server does.
        assert process.wait(timeout=15) == -signal.SIGTERM
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
