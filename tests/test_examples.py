"""``examples/drafts.py``, run the way the documentation's "Drafts" page runs it.

The page's ``sh`` block is read when the test runs: its three ``signoff token
create`` lines make the tokens, its viewer query reads the person's account id, and its
``examples/drafts.py`` command runs as a subprocess with only the base URL changed to the
test server's. The script's output must match the page's ``text`` block line by line,
ids aside.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from tests.live import Server, server_log_on_failure
from tests.processes import ROOT
from tests.readme_shell import page
from tests.test_readme import token_create

Serve = Callable[..., Awaitable[Server]]

TOKEN = re.compile(
    r"^(?P<name>[A-Z]+)=\$\(\.venv/bin/signoff token create (?P<args>[^)]*)\)$", re.M
)
VIEWER = "query { viewer { actor { id } } }"
DEFAULT_URL = "http://127.0.0.1:8000"
# Ids, digests, operation keys and the claim's random number vary from run to run.
VARYING = re.compile(
    r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|\b[0-9a-f]{32}\b|\b[0-9a-f]{8}\b"
)


def drafts_section() -> str:
    """The Drafts page of the documentation site, whose walk-through runs the script."""
    text = page("docs/drafts.md")
    assert text.startswith("# Drafts\n"), "docs/drafts.md is no longer the Drafts page"
    return text


def fenced(section: str, language: str) -> str:
    (block,) = re.findall(rf"^```{language}\n(.*?)^```$", section, re.M | re.S)
    text: str = block
    return text


def script_command(block: str, variables: dict[str, str], url: str) -> list[str]:
    """The block's ``examples/drafts.py`` command, its shell variables filled in."""
    joined = block.replace("\\\n", " ")
    (line,) = [ln for ln in joined.splitlines() if "examples/drafts.py" in ln]
    argv = shlex.split(line)
    assert argv[:2] == [".venv/bin/python", "examples/drafts.py"], argv
    filled = []
    for arg in argv[2:]:
        if arg.startswith("$"):
            arg = variables[arg[1:]]
        filled.append(url if arg == DEFAULT_URL else arg)
    return [sys.executable, "examples/drafts.py", *filled]


def normalized(text: str) -> list[str]:
    return [" ".join(VARYING.sub("…", line).split()) for line in text.strip().splitlines()]


async def account_id(server: Server, token: str) -> str:
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
        response = await http.post(
            "/graphql", json={"query": VIEWER}, headers={"Authorization": f"Bearer {token}"}
        )
    body: dict[str, Any] = response.json()
    assert not body.get("errors"), body
    actor_id: str = body["data"]["viewer"]["actor"]["id"]
    return actor_id


async def test_the_drafts_example_runs_as_the_readme_says(serve: Serve, database_url: str) -> None:
    section = drafts_section()
    block = fenced(section, "sh")
    assert VIEWER in block and "localhost:8000/graphql" in block

    server = await serve()
    variables = {}
    for match in TOKEN.finditer(block):
        variables[match["name"]] = await token_create(database_url, *shlex.split(match["args"]))
    assert set(variables) == {"AGENT", "PERSON", "EXECUTOR"}
    variables["ACCOUNT"] = await account_id(server, variables["PERSON"])

    command = script_command(block, variables, server.url)
    with server_log_on_failure(server):
        done = await asyncio.to_thread(
            subprocess.run, command, cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stdout + done.stderr
        lines = normalized(done.stdout)
        assert lines[-1] == "done: draft … OBSERVED; dispatch allowed once, then DISPATCH_CONSUMED"
        assert "5. executor checks dispatch allowed=True managed=True" in lines
        assert "executor checks again refused DISPATCH_CONSUMED" in lines
        assert lines == normalized(fenced(section, "text"))


async def test_the_drafts_example_fails_on_an_unexpected_error(serve: Serve) -> None:
    server = await serve()
    command = [
        sys.executable,
        "examples/drafts.py",
        *("--url", server.url, "--agent-token", "not-a-token", "--person-token", "x"),
        *("--integration-token", "y", "--account-id", "z"),
    ]
    done = await asyncio.to_thread(
        subprocess.run, command, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "error: UNAUTHENTICATED" in done.stderr
