"""``signoff serve`` on a port another process holds: one line saying what to do, before
anything starts."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.processes import run_cli, signoff_env


def test_a_busy_port_is_one_line_suggesting_another(tmp_path: Path) -> None:
    database = tmp_path / "signoff.db"
    with socket.socket() as other:  # as a first `make serve` holds it
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        served = run_cli(
            "serve",
            env=signoff_env(f"sqlite:///{database}", SIGNOFF_PORT=str(port)),
            cwd=tmp_path,
        )
    assert served.returncode == 2, served
    assert served.stderr == (
        f"error: port {port} is in use (another signoff serve?); "
        f"set SIGNOFF_PORT={port + 1}, or pass --port {port + 1}.\n"
    )
    assert served.stdout == ""
    assert not database.exists()  # refused before migrating
