"""Running real ``signoff`` processes from tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx

from signoff.config import parse_networks
from tests import zygote

ROOT = Path(__file__).resolve().parent.parent
# The suite's receivers listen on loopback, which deliveries may not reach by default:
# every server and worker a test starts allows it, as the README's examples do.
LOOPBACK = "127.0.0.0/8,::1/128"
LOOPBACK_NETWORKS = parse_networks("SIGNOFF_DELIVERY_ALLOW_NETWORKS", LOOPBACK)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def signoff_env(database_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNOFF_")}
    env.update(
        {
            "SIGNOFF_DATABASE_URL": database_url,
            "SIGNOFF_LOG_LEVEL": "warning",
            "SIGNOFF_SECRET_KEY": os.environ["SIGNOFF_SECRET_KEY"],
            "SIGNOFF_AUDIT_SIGNING_KEY": os.environ["SIGNOFF_AUDIT_SIGNING_KEY"],
            "SIGNOFF_DELIVERY_ALLOW_NETWORKS": LOOPBACK,
            **extra,
        }
    )
    return env


def run_cli(
    *args: str, env: dict[str, str], cwd: Path = ROOT, timeout: float = 60, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "signoff", *args]
    if zygote.warm(command) is None:
        return subprocess.run(
            command, env=env, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=timeout
        )
    with tempfile.TemporaryDirectory() as folder:
        streams = {name: Path(folder) / name for name in ("stdin", "stdout", "stderr")}
        streams["stdin"].write_text(stdin)
        process = zygote.spawn(command, env=env, cwd=cwd, **streams)
        assert process is not None
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        return subprocess.CompletedProcess(
            command, code, streams["stdout"].read_text(), streams["stderr"].read_text()
        )


# Another process (another pytest-xdist worker's server, a client's outgoing connection)
# can take a free port before the server binds it: then the server is started again on
# another port, this many times at most. Signoff's refusal, or uvicorn's if the port was
# taken after Signoff's own check, says so.
PORT_TRIES = 3
PORT_BUSY = ("is in use", "address already in use")


class PortBusy(RuntimeError):
    """The port chosen for a server was taken before it could listen there."""


@contextmanager
def serving(
    env: dict[str, str],
    timeout: float = 30,
    cwd: Path = ROOT,
    command: Sequence[str] = (sys.executable, "-m", "signoff"),
) -> Iterator[str]:
    """Start ``signoff serve`` (``command serve``) on a free port; yield its base URL once
    /readyz answers."""
    for attempt in range(1, PORT_TRIES + 1):
        port = free_port()
        with tempfile.NamedTemporaryFile(mode="w+") as output:
            argv = [*command, "serve", "--port", str(port)]
            process: subprocess.Popen[str] | zygote.WarmProcess | None
            process = zygote.spawn(argv, env=env, cwd=cwd, stdout=Path(output.name))
            if process is None:
                process = subprocess.Popen(
                    argv, env=env, cwd=cwd, stdout=output, stderr=subprocess.STDOUT, text=True
                )
            base = f"http://127.0.0.1:{port}"
            try:
                try:
                    _wait_ready(process, base, output, timeout)
                except PortBusy:
                    if attempt == PORT_TRIES:
                        raise
                    continue
                yield base
                return
            finally:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _wait_ready(
    process: subprocess.Popen[str] | zygote.WarmProcess, base: str, output: IO[str], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            output.seek(0)
            printed = output.read()
            if any(busy in printed for busy in PORT_BUSY):
                raise PortBusy(f"signoff serve exited: {printed}")
            raise RuntimeError(f"signoff serve exited: {printed}")
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("signoff serve did not become ready")
        time.sleep(0.1)
