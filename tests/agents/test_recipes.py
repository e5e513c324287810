"""The recipes in examples/agents, each run as its README prints it against a real
``signoff serve``, with a reviewer deciding what the agent proposes as the README says
(approving, amending, rejecting)."""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.agents.conftest import Decision, approve_each, fenced, review
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


# What the three framework recipes' READMEs ask of the reviewer.
DECISIONS: dict[str, list[Decision]] = {
    "T-1001": ["approve"],
    "T-1002": [("amend", {"amount": 30}), "approve"],
    "T-1003": [("reject", "Already refunded")],
}


async def run_as_printed(stage: Stage, recipe: str) -> None:
    """Run the recipe's command as its README prints it, decide as the README says, and
    compare what it prints with the README's lines (in any order)."""
    readme = (ROOT / "examples" / "agents" / recipe / "README.md").read_text()
    *setup, command = fenced(readme, "sh")
    printed = fenced(readme, "text")[0].splitlines()
    for step in setup:  # building the recipe's venv, where it has one
        built = await asyncio.create_subprocess_exec(
            "bash", "-c", step, cwd=ROOT, stderr=asyncio.subprocess.PIPE
        )
        _, err = await built.communicate()
        assert built.returncode == 0, err.decode()
    command = command.replace("127.0.0.1:8000", f"127.0.0.1:{stage.server.port}")
    process = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command,
        cwd=ROOT,
        env={**os.environ, "AGENT": stage.world.agent},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    await review(stage, DECISIONS, process)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert sorted(out.decode().splitlines()) == sorted(printed)
    assert [r.body["payload"]["amount"] for r in stage.receiver.requests] in ([120, 30], [30, 120])


async def test_the_pydantic_ai_agent_runs_as_printed(refunds: Stage) -> None:
    await run_as_printed(refunds, "pydantic_ai")


async def test_the_langgraph_graph_runs_as_printed(refunds: Stage) -> None:
    await run_as_printed(refunds, "langgraph")


@pytest.mark.timeout(300)  # a first run builds the recipe's venv
async def test_the_openai_agents_sdk_agent_runs_as_printed(refunds: Stage) -> None:
    await run_as_printed(refunds, "openai_agents")
