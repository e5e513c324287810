"""``signoff_client.langgraph`` against the real LangGraph and a real ``signoff serve``: a
run stopped for approval in one process, its state on disk, is resumed by another process
that finds the proposal the first made (and its decision) instead of asking again."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

from tests.client.conftest import Stage
from tests.client.test_client import run_agent, target_name
from tests.conftest import checked_once

pytestmark = checked_once


async def run_graph(stage: Stage, *args: str) -> dict[str, Any]:
    process = await run_agent(stage, "langgraph_agent.py", *args)
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0
    found: dict[str, Any] = json.loads(out)
    return found


async def test_another_process_resumes_the_run_from_its_checkpoint(
    agent_stage: Stage, tmp_path: Path
) -> None:
    stage, thread = agent_stage, f"thread-{uuid.uuid4().hex}"
    args = (await target_name(stage), str(tmp_path), thread)
    started = await run_graph(stage, *args, "start")
    assert set(started) == {"waiting"}  # it proposed, then ended before the decision
    assert (tmp_path / "storage.pickle").exists()
    await stage.decide(started["waiting"])
    resumed = await run_graph(stage, *args, "resume")
    assert resumed["decision"]["status"] == "approved"
    assert resumed["decision"]["proposal_id"] == started["waiting"]  # not a new proposal
    assert resumed["line"] == "approved 120"
    assert await stage.proposals_count() == 1
    assert (tmp_path / "plans").read_text() == "T-1\n"  # the plan came from the checkpoint
