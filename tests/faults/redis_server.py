"""A throwaway ``redis-server`` on a free port that a test can kill and start again, so a
Redis outage never touches the machine's shared Redis. Nothing is saved to disk."""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.processes import free_port, signoff_env

REDIS_SERVER = shutil.which("redis-server")
requires_redis_server = pytest.mark.skipif(
    REDIS_SERVER is None, reason="needs the redis-server binary to start a Redis of its own"
)

NOTHING_SAVED = ("--save", "", "--appendonly", "no", "--loglevel", "warning")


class RedisServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.kill()

    def start(self) -> None:
        assert REDIS_SERVER is not None
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", *NOTHING_SAVED],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
            finally:
                client.close()

    def kill(self) -> None:
        """SIGKILL: no shutdown, no goodbye to clients, as a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self.process = None


@contextlib.contextmanager
def worker_process(
    database_url: str, redis_url: str, log_dir: Path
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """``signoff worker`` sweeping every second, logging at INFO to ``worker.log``; stopped
    with SIGTERM (then SIGKILL) afterwards."""
    log = log_dir / "worker.log"
    env = signoff_env(
        database_url,
        SIGNOFF_REDIS_URL=redis_url,
        SIGNOFF_SWEEP_INTERVAL_SECONDS="1",
        SIGNOFF_LOG_LEVEL="info",
    )
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "signoff", "worker"], env=env, stdout=out, stderr=out
        )
    try:
        yield process, log
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
