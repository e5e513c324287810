"""Warm starts for the ``signoff`` processes the tests run.

Most of a ``signoff`` process's start is importing its modules, and the suite starts a
hundred servers and as many commands. A zygote process per pytest worker imports them
once; each ``signoff serve`` or command is then a fork of it that sets its working
directory, environment, arguments and standard streams and runs ``signoff.cli.main``, as
``python -m signoff`` does after its imports. The child is a real process: it binds its
own port, opens its own database connections, takes signals and exits with a status, as
the tests' ``subprocess.Popen`` objects do (``WarmProcess`` answers the same calls).

What a fork does not show, a start from nothing does: the README's shell blocks, the
installed wheel and ``--help`` still run a new interpreter, and
``SIGNOFF_TEST_WARM_STARTS=0`` makes every start one (``python -m tests.zygote`` is the
zygote itself).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENABLED = os.environ.get("SIGNOFF_TEST_WARM_STARTS", "1") != "0"


class Zygote:
    """The client of one zygote process; requests from several threads take turns."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.zygote"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._turn = threading.Lock()
        self.ask({"op": "ready"})

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        with self._turn:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the zygote exited with {self.process.poll()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        """End of input ends the zygote (its children are their tests' to stop)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


_zygote: Zygote | None = None
_starting = threading.Lock()


def zygote() -> Zygote:
    """This worker's zygote, started at its first use and stopped at the worker's exit."""
    global _zygote
    with _starting:
        if _zygote is None or _zygote.process.poll() is not None:
            _zygote = Zygote()
    return _zygote


def stop_zygote() -> None:
    if _zygote is not None:
        _zygote.close()


class WarmProcess:
    """A forked ``signoff`` process, driven as a ``subprocess.Popen`` is."""

    def __init__(self, args: Sequence[str], pid: int, owner: Zygote) -> None:
        self.args = list(args)
        self.pid = pid
        self.returncode: int | None = None
        self._owner = owner

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._owner.ask({"op": "poll", "pid": self.pid})["returncode"]
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            time.sleep(0.01)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def warm(command: Sequence[str]) -> list[str] | None:
    """The ``signoff`` arguments of ``command`` when a fork can run it, else ``None``."""
    if not ENABLED or list(command[:3]) != [sys.executable, "-m", "signoff"]:
        return None
    arguments = list(command[3:])
    return None if "--help" in arguments or "-h" in arguments else arguments


def spawn(
    command: Sequence[str],
    *,
    env: dict[str, str],
    cwd: Path | str | None = None,
    stdin: Path | None = None,
    stdout: Path | None = None,
    stderr: Path | None = None,
) -> WarmProcess | None:
    """Fork ``command`` (``python -m signoff …``) from the zygote, its streams on those
    files (``stderr=None``: with stdout); ``None`` where a fork cannot run it."""
    arguments = warm(command)
    if arguments is None:
        return None
    owner = zygote()
    answer = owner.ask(
        {
            "op": "spawn",
            "argv": arguments,
            "env": env,
            "cwd": str(cwd or ROOT),
            "stdin": str(stdin) if stdin else os.devnull,
            "stdout": str(stdout) if stdout else os.devnull,
            "stderr": str(stderr) if stderr else None,
        }
    )
    return WarmProcess(command, answer["pid"], owner)


def _child(request: dict[str, Any]) -> None:
    """In the forked child: become ``python -m signoff ARGV`` and never return."""
    code = 1
    try:
        stdin = os.open(request["stdin"], os.O_RDONLY)
        stdout = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        stderr = (
            os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            if request["stderr"]
            else stdout
        )
        for source, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(source, target)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 (the process's own streams)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [str(Path(sys.modules["signoff"].__file__ or "").parent / "__main__.py")]
        sys.argv += request["argv"]
        from signoff.cli import main

        try:
            main(request["argv"])
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
            if isinstance(exit.code, str):
                print(exit.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        import logging

        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed stream has nothing to flush
                stream.flush()
        os._exit(code)


def _returncode(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _serve() -> None:
    """The zygote: import what every ``signoff`` process imports, then fork on request."""
    import importlib

    for name in (
        "signoff.web.app",
        "signoff.cli",
        "signoff.web.serving",
        "signoff.jobs.worker",
        # What uvicorn, SQLAlchemy and Alembic import only once they run.
        "uvicorn.protocols.websockets.websockets_sansio_impl",
        "uvicorn.protocols.http.httptools_impl",
        "uvicorn.protocols.http.h11_impl",
        "uvicorn.lifespan.on",
        "uvicorn.loops.auto",
        "sqlalchemy.dialects.sqlite.aiosqlite",
        "sqlalchemy.dialects.postgresql.psycopg",
        "alembic.runtime.migration",
    ):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    finished: dict[int, int] = {}
    for line in sys.stdin:
        request = json.loads(line)
        answer: dict[str, Any] = {}
        if request["op"] == "spawn":
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                _child(request)
            answer = {"pid": pid}
        elif request["op"] == "poll":
            pid = request["pid"]
            if pid not in finished:
                try:
                    done, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:  # not ours, or gone without a status
                    done, status = pid, 0
                if done:
                    finished[pid] = _returncode(status)
            answer = {"returncode": finished.get(pid)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
