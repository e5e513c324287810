"""docs/agents.md ("For agent authors") as printed: its Python (and JavaScript) examples run
as scripts against a real ``signoff serve``, a reviewer approving what they propose; its
desktop MCP configuration starts the MCP server through the official MCP client."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.agents.conftest import approve_each, fenced
from tests.client.conftest import Stage
from tests.conftest import checked_once
from tests.machine import require_node_package
from tests.processes import ROOT
from tests.readme_shell import page

pytestmark = checked_once

PAGE = "docs/agents.md"
TYPESCRIPT = ROOT / "clients" / "typescript"


async def run_script(stage: Stage, code: str) -> list[str]:
    """Run ``code`` as the agent, approving its proposal; the lines it printed."""
    env = {**os.environ, "SIGNOFF_URL": stage.server.url, "SIGNOFF_TOKEN": stage.world.agent}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    await approve_each(stage, 1, process)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    return out.decode().splitlines()


async def run_node(stage: Stage, code: str) -> list[str]:
    """Run ``code`` under Node, in the TypeScript client's folder (so that it imports the
    package by its name), as the agent approving its proposal; the lines it printed."""
    node = require_node_package(TYPESCRIPT, "graphql-ws")
    script = TYPESCRIPT / f".docs-example-{uuid.uuid4().hex[:8]}.mjs"
    script.write_text(code)
    env = {**os.environ, "SIGNOFF_URL": stage.server.url, "SIGNOFF_TOKEN": stage.world.agent}
    try:
        process = await asyncio.create_subprocess_exec(
            node,
            script.name,
            cwd=TYPESCRIPT,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        await approve_each(stage, 1, process)
        out, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        script.unlink()
    assert process.returncode == 0, err.decode()
    return out.decode().splitlines()


async def test_the_python_examples_run_as_printed(refunds: Stage) -> None:
    text = page(PAGE)
    # Titled, so that the README's runner of graphql blocks leaves it to this test.
    (register,) = fenced(text, 'graphql title="[^"\n]*"')
    mutation = register.replace("<the payments queue id>", refunds.world.queue_id)
    registered = await refunds.gql(mutation, {}, refunds.world.admin)
    assert registered["registerTarget"]["target"]["agentExecutes"] is True
    scripts, printed = fenced(text, "python"), fenced(text, "text")
    assert len(scripts) == 4 and len(printed) == 5
    # In the page's order: three Python examples, the JavaScript one, then the recipes'
    # statement of the target they need.
    python_printed = [*printed[:3], printed[4]]
    for script, output in zip(scripts, python_printed, strict=True):
        assert await run_script(refunds, script) == output.splitlines()
    (javascript,) = fenced(text, "js")
    assert await run_node(refunds, javascript) == printed[3].splitlines()
    # The decorated function ran once for its one approval, the second call replayed it.
    data = await refunds.gql(
        "query { proposals(state: APPLIED) { nodes { executor } } }", {}, refunds.world.admin
    )
    assert len([n for n in data["proposals"]["nodes"] if n["executor"]]) == 3


async def test_the_desktop_configuration_starts_the_mcp_server(refunds: Stage) -> None:
    config = json.loads(fenced(page(PAGE), "json")[0])
    server = config["mcpServers"]["signoff"]
    env = dict(server["env"])
    assert env["SIGNOFF_URL"] == "http://127.0.0.1:8000"
    env["SIGNOFF_URL"] = refunds.server.url  # the test's server, on a free port
    assert env["SIGNOFF_TOKEN"] == "<the refund-bot token>"
    env["SIGNOFF_TOKEN"] = refunds.world.agent
    bin_dir = str(Path(sys.executable).parent)  # the venv the page names
    params = StdioServerParameters(
        command=server["command"],
        env={**env, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("list_targets", {})
        assert not result.is_error, result.content
        assert result.structured_content is not None
        names = [t["name"] for t in result.structured_content["targets"]]
        assert names == ["refunds"]
