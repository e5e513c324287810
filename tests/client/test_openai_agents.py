"""``signoff_client.openai_agents`` against the real OpenAI Agents SDK (its own venv, as
its recipe's) with a scripted model and a real ``signoff serve``: a rejection reaches the
model as the tool's output with the reviewer's reason, and the tool never runs; an
amended, then approved, call executes once with the reviewer's payload."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from tests.agents.conftest import AMEND, amendment
from tests.client.conftest import Stage
from tests.client.test_client import target_name
from tests.client.test_pydantic_ai import pending
from tests.conftest import checked_once
from tests.machine import missing
from tests.processes import ROOT

pytestmark = checked_once

PYTHON = ROOT / ".venv-openai-agents" / "bin" / "python"


async def start(stage: Stage) -> asyncio.subprocess.Process:
    if not PYTHON.exists():
        missing("needs the OpenAI Agents SDK's venv: make .venv-openai-agents/.installed")
    env = {**os.environ, "SIGNOFF_URL": stage.server.url, "SIGNOFF_TOKEN": stage.world.agent}
    return await asyncio.create_subprocess_exec(
        str(PYTHON),
        str(Path(__file__).parent / "openai_agents_agent.py"),
        await target_name(stage),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def ended(process: asyncio.subprocess.Process) -> dict[str, Any]:
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    found: dict[str, Any] = json.loads(out)
    return found


async def test_a_rejection_is_the_tools_output_for_the_model(agent_stage: Stage) -> None:
    process = await start(agent_stage)
    first = await pending(agent_stage, 1)
    await agent_stage.decide(first["id"], "REJECTED", reason="Already refunded")
    run = await ended(process)
    denial = "not approved (rejected: Already refunded)"
    assert run == {"output": denial, "executed": [], "seen": [denial]}


async def test_an_amended_call_executes_once_as_amended(agent_stage: Stage) -> None:
    stage = agent_stage
    process = await start(stage)
    first = await pending(stage, 1)
    await stage.gql(AMEND, {"input": amendment(first, {"amount": 30})}, stage.world.reviewers[0])
    await stage.world.decide(stage.world.reviewers[1], await pending(stage, 2))
    run = await ended(process)
    assert run["executed"] == [{"amount": 30, "currency": "EUR"}]
    assert run["output"] == "refunded 30 EUR"
    assert (await stage.proposal(first["id"]))["state"] == "APPLIED"
