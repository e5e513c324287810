"""The README's and the documentation site's shell examples, run as printed: each command
through ``bash`` in the repository, as a reader pastes it into a terminal.

The examples are read where a reader reads them: ``page("README.md")`` or a page of the
site (``page("docs/delivery.md")``), and ``section(text, heading)`` the part under one
heading.

A reader copies an id from one answer into the next command; here the placeholders in
angle brackets (``"<queue id>"``, ``'<signing secret>'``) are filled from earlier answers,
and the fixed ports the examples name (8000, 9000, 9001) become free ones, through
``SIGNOFF_PORT`` for the server, as the examples say, and by rewriting the receivers' ports.
Nothing else is changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from tests.processes import ROOT

SH_FENCE = re.compile(r"^```sh[ \t]*\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
SH_PLACEHOLDER = re.compile(r"""(?P<quote>["'])<(?P<name>[^"'<>]+)>(?P=quote)""")
FUNCTION = re.compile(r"^\w+\(\) \{")
ASSIGNMENT = re.compile(r"^(?P<name>[A-Z_]+)=\$\(")
MAKE_SERVE = re.compile(r"^(?P<settings>(?:[A-Z_]+=\S+ )*)make serve\b")


def page(name: str) -> str:
    """The text of ``README.md`` or of a page of the documentation site (``docs/NAME.md``),
    named by its path in the repository."""
    assert name == "README.md" or name.startswith("docs/"), name
    return (ROOT / name).read_text()


def page_section(name: str, heading: str) -> str:
    """The text under ``heading`` on the page ``name`` (see ``page`` and ``section``)."""
    return section(page(name), heading)


def section(readme: str, heading: str) -> str:
    """The text under ``heading`` (a whole heading line), up to the next heading (a line
    starting with ``#`` outside a fenced block: a shell comment is none)."""
    lines = readme[readme.index(f"\n{heading}\n") + len(heading) + 2 :].splitlines()
    fenced = False
    for index, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            return "\n".join(lines[:index])
    return "\n".join(lines)


def sh_blocks(text: str) -> list[str]:
    return [match["body"] for match in SH_FENCE.finditer(text)]


def commands(block: str) -> list[str]:
    """A block's commands: a command's continuation lines are indented; comments and
    ``make serve`` (the test's server stands in for it, with the settings printed in front
    of it: ``serve_settings``) are left out."""
    found: list[str] = []
    for line in block.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line[0].isspace() and found:
            found[-1] += "\n" + line
        else:
            found.append(line)
    return [c for c in found if MAKE_SERVE.match(c) is None]


def serve_settings(text: str) -> dict[str, str]:
    """The variables a page's first ``make serve`` is printed with (``A=1 make serve``), for
    the test's server that stands in for it."""
    for block in sh_blocks(text):
        for line in block.splitlines():
            started = MAKE_SERVE.match(line)
            if started is not None:
                return dict(pair.split("=", 1) for pair in started["settings"].split())
    raise AssertionError("no make serve printed here")


@dataclass
class Shell:
    """A terminal: the variables and functions its commands defined, and what they printed."""

    env: dict[str, str]
    ports: dict[int, int] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    functions: str = ""

    def fill(self, command: str) -> str:
        def value(match: re.Match[str]) -> str:
            name, quote = match["name"], match["quote"]
            assert name in self.values, f"no earlier answer gave <{name}>: {command}"
            filled = self.values[name]
            return json.dumps(filled) if quote == '"' else f"'{filled}'"

        filled = SH_PLACEHOLDER.sub(value, command)
        for printed, free in self.ports.items():
            filled = filled.replace(f"127.0.0.1:{printed}/", f"127.0.0.1:{free}/")
            filled = filled.replace(f"--port {printed}", f"--port {free}")
        return filled

    async def run(self, command: str) -> dict[str, Any] | None:
        """Run one command; a ``gql`` call's answer (which must have no errors) is returned."""
        if FUNCTION.match(command):
            self.functions += command + "\n"
            return None
        assignment = ASSIGNMENT.match(command)
        script = self.functions + self.fill(command)
        if assignment:
            script += f'\nprintf %s "${assignment["name"]}"'
        result = await asyncio.to_thread(
            subprocess.run,
            ["bash", "-c", script],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, f"{command}\n{result.stdout}{result.stderr}"
        if assignment:
            self.env[assignment["name"]] = result.stdout
            return None
        answer: dict[str, Any] = json.loads(result.stdout)
        assert not answer.get("errors"), f"{command}\n{answer}"
        data: dict[str, Any] = answer["data"]
        return data

    @contextlib.contextmanager
    def background(self, command: str) -> Iterator[IO[str]]:
        """A long-running command (a receiver) in its own process group, its output kept;
        yields once the port it listens on accepts connections."""
        filled = self.fill(command)
        port = int(re.findall(r"--port (\d+)", filled)[-1])
        with tempfile.TemporaryFile(mode="w+") as output:
            process = subprocess.Popen(
                ["bash", "-c", filled],
                env=self.env,
                cwd=ROOT,
                stdout=output,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            try:
                deadline = time.monotonic() + 30
                while not _accepts(port):
                    assert process.poll() is None, f"{filled} exited: {printed(output)}"
                    assert time.monotonic() < deadline, f"{filled} did not listen"
                    time.sleep(0.1)
                yield output
            finally:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=10)


def _accepts(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def printed(output: IO[str]) -> str:
    output.seek(0)
    return output.read()
