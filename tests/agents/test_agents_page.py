"""docs/agents.md ("For agent authors") as printed: its Python examples run as scripts
against a real ``signoff serve``, a reviewer approving what they propose; its desktop MCP
configuration starts the MCP server through the official MCP client."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.agents.conftest import approve_each, fenced
from tests.client.conftest import Stage
from tests.readme_shell import page

PAGE = "docs/agents.md"


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


async def test_the_python_examples_run_as_printed(refunds: Stage) -> None:
    text = page(PAGE)
    propose, decorated = fenced(text, "python")
    printed = fenced(text, "text")[0].splitlines()
    assert await run_script(refunds, propose) == printed
    assert await run_script(refunds, decorated) == ["refunded 120 EUR"]


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
