"""The recipes in examples/agents, each run as its README prints it against a real
``signoff serve``, with a reviewer approving what the agent proposes."""

from __future__ import annotations

import asyncio
import os

from tests.agents.conftest import approve_each, fenced
from tests.client.conftest import Stage
from tests.processes import ROOT


async def test_the_asyncio_worker_runs_as_printed(refunds: Stage) -> None:
    readme = (ROOT / "examples" / "agents" / "asyncio_worker" / "README.md").read_text()
    [command] = fenced(readme, "sh")
    printed = fenced(readme, "text")[0].splitlines()
    command = command.replace("127.0.0.1:8000", f"127.0.0.1:{refunds.server.port}")
    process = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command,
        cwd=ROOT,
        env={**os.environ, "AGENT": refunds.world.agent},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    await approve_each(refunds, 2, process)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert sorted(out.decode().splitlines()) == sorted(printed)
