"""The recipes in examples/agents, each run as its README prints it against a real
``signoff serve``, with a reviewer deciding what the agent proposes as the README says
(approving, amending, rejecting). All five run one after another on one server that also
has the worked example's ``refunds`` target (whose ``small`` rule approves refunds up to
100 with no person): each registers the target it needs with its own script's
``register`` step (an admin's token) and its tickets (the same ticket ids as the others')
are decided and delivered (or executed by the agent) there alone."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

from signoff.database import SessionMaker
from tests.agents.conftest import Decision, approve_each, fenced, review
from tests.client.conftest import Serve, Stage, staged
from tests.conftest import checked_once
from tests.machine import require_node_package
from tests.processes import ROOT
from tests.receivers import Receiver
from tests.receivers import serve as serve_receiver

pytestmark = checked_once

# What the framework recipes' READMEs ask of the reviewer (the asyncio worker's approves both).
DECISIONS: dict[str, list[Decision]] = {
    "T-1001": ["approve"],
    "T-1002": [("amend", {"amount": 30}), "approve"],
    "T-1003": [("reject", "Already refunded")],
}
RECIPES = {  # each recipe, and the amounts its receiver is delivered
    "asyncio_worker": [40, 120],
    "pydantic_ai": [30, 120],
    "langgraph": [30, 120],
    "openai_agents": [30, 120],
    "vercel_ai": [30, 120],
}
# The recipes whose agent executes the refund itself (a target without a url): nothing is
# delivered, each approval is executed once by the agent.
EXECUTES = {"vercel_ai"}
# The worked example's policy: refunds up to 100 need no person.
SMALL = {
    "rules": [
        {"name": "small", "when": {"properties": {"amount": {"maximum": 100}}}, "approvals": 0}
    ],
    "default": {"approvals": 1},
}


async def run(stage: Stage, command: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command.replace("127.0.0.1:8000", f"127.0.0.1:{stage.server.port}"),
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def register(stage: Stage, command: str, receiver: Receiver | None = None) -> str:
    """Run the README's registration as printed, as an admin, on the test's queue (and
    delivering to the test's receiver, for a recipe Signoff delivers for), twice: the
    second finds the first's target and uses it. The target's name."""
    url = re.search(r"--url (\S+)", command)
    assert (url is None) == (receiver is None)
    if url is not None and receiver is not None:
        command = command.replace(url[1], receiver.url)
    command = command.replace("--queue payments", f"--queue {stage.world.queue_slug}")
    lines = []
    for _ in range(2):
        process = await run(stage, command, {"OPS": stage.world.admin})
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0, err.decode()
        lines.append(out.decode().strip())
    name = command.split("--target ")[1].split()[0]
    assert lines[1] == f"{name}: already registered"
    if receiver is None:
        assert lines[0] == f"{name}: registered"
    else:
        receiver.secret = lines[0].removeprefix(f"{name}: registered, signing secret ")
    return name


async def run_as_printed(stage: Stage, recipe: str) -> None:
    """Build the recipe's venv where it has one, register its target, run it as its README
    prints, decide as the README says, and compare what it prints with the README's lines
    (in any order) and what its own receiver was delivered with what was approved."""
    readme = (ROOT / "examples" / "agents" / recipe / "README.md").read_text()
    *setup, registration, command = fenced(readme, "sh")
    printed = fenced(readme, "text")[0].splitlines()
    for step in setup:
        built = await asyncio.create_subprocess_exec(
            "bash", "-c", step, cwd=ROOT, stderr=asyncio.subprocess.PIPE
        )
        _, err = await built.communicate()
        assert built.returncode == 0, err.decode()
    # The registration is the recipe's own: the script it runs registers its target.
    script = re.search(r"examples/agents/\S+", command)
    assert script is not None and f"{script[0]} register " in registration
    if recipe in EXECUTES:
        await run_executing(stage, recipe, registration, command, printed)
        return
    receiver = Receiver()
    async with serve_receiver(receiver):
        name = await register(stage, registration, receiver)
        assert f"--target {name}" in command
        process = await run(stage, command, {"AGENT": stage.world.agent})
        if recipe == "asyncio_worker":
            await approve_each(stage, 2, process)
        else:
            await review(stage, DECISIONS, process)
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0, err.decode()
        assert sorted(out.decode().splitlines()) == sorted(printed)
        assert sorted(r.body["payload"]["amount"] for r in receiver.requests) == RECIPES[recipe]
        assert receiver.refused == 0


async def run_executing(
    stage: Stage, recipe: str, registration: str, command: str, printed: list[str]
) -> None:
    """A recipe that runs the refund itself: its own registration, then the agent, whose
    approved proposals each end APPLIED once, executed by the agent."""
    name = await register(stage, registration)
    assert f"--target {name}" in command
    process = await run(stage, command, {"AGENT": stage.world.agent})
    await review(stage, DECISIONS, process)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert sorted(out.decode().splitlines()) == sorted(printed)
    data = await stage.gql(
        "query { proposals(state: APPLIED) { nodes { payload executor target { name } } } }",
        {},
        stage.world.admin,
    )
    applied = [node for node in data["proposals"]["nodes"] if node["target"]["name"] == name]
    assert sorted(node["payload"]["amount"] for node in applied) == RECIPES[recipe]
    assert all(node["executor"] for node in applied)


@pytest.mark.timeout(600)  # a first run builds the OpenAI Agents SDK recipe's venv
async def test_the_recipes_run_as_printed_one_after_another(
    serve: Serve, sessionmaker: SessionMaker, database_url: str, tmp_path: Path
) -> None:
    async with staged(
        serve, sessionmaker, database_url, tmp_path, name="refunds", approvalPolicy=SMALL
    ) as stage:
        for recipe in RECIPES:
            await run_as_printed(stage, recipe)
        assert stage.receiver.requests == []  # nothing went to the worked example's target


async def test_a_recipe_says_what_its_target_needs_and_who_registers_it(
    serve: Serve, sessionmaker: SessionMaker, database_url: str, tmp_path: Path
) -> None:
    """Run without its target, a recipe stops saying what the target needs and that an
    admin registers it; its registration with an agent's token says it needs an admin's;
    and it refuses a target of its name that is not as it needs (here the worked example's
    ``refunds``, whose ``small`` rule approves refunds up to 100 with no person), leaving
    it unchanged."""
    async with staged(
        serve, sessionmaker, database_url, tmp_path, name="refunds", approvalPolicy=SMALL
    ) as refunds:
        await refuse_what_the_recipe_cannot_use(refunds)


async def refuse_what_the_recipe_cannot_use(refunds: Stage) -> None:
    worker = ".venv/bin/python examples/agents/asyncio_worker/worker.py"
    env = {"SIGNOFF_URL": refunds.server.url, "SIGNOFF_TOKEN": refunds.world.agent}
    missing = await run(refunds, f"{worker} --target recipe-nowhere --ticket T-1", env)
    _, err = await asyncio.wait_for(missing.communicate(), 60)
    assert missing.returncode == 1
    assert err.decode().strip() == (
        "No target 'recipe-nowhere'. It needs 1 approval(s) for every proposal (no approval "
        "policy), amendable, the agent accepting an amendment before it is decided; Signoff "
        "delivers approved proposals to a url; an admin registers it first (this agent's "
        "`register` step, with an admin's token)."
    )
    queue, url = refunds.world.queue_slug, refunds.receiver.url
    step = f"{worker} register --target recipe-x --queue {queue} --url {url}"
    as_agent = await run(refunds, step, env)
    _, err = await asyncio.wait_for(as_agent.communicate(), 60)
    assert as_agent.returncode == 1
    assert err.decode().startswith("Registering 'recipe-x' needs an admin's (or operator's) token")
    env["SIGNOFF_TOKEN"] = refunds.world.admin
    other = await run(refunds, step.replace("recipe-x", "refunds"), env)
    _, err = await asyncio.wait_for(other.communicate(), 60)
    assert other.returncode == 1
    assert err.decode().startswith("Target 'refunds' exists but approvalPolicy is {")
    data = await refunds.gql("query { targets { name } }", {}, refunds.world.admin)
    assert [target["name"] for target in data["targets"]] == ["refunds"]


async def test_the_vercel_ai_recipe_says_what_its_target_needs(refunds: Stage) -> None:
    """The Node recipe too: without its target it stops saying an admin registers it, and
    it refuses a target of its name that Signoff delivers for, asking the agent to accept
    amendments (the worked example's ``refunds``)."""
    require_node_package(ROOT / "examples" / "agents" / "vercel_ai", "ai")
    agent = "node examples/agents/vercel_ai/agent.mjs"
    env = {"SIGNOFF_URL": refunds.server.url, "SIGNOFF_TOKEN": refunds.world.agent}
    missing = await run(refunds, f"{agent} --target recipe-nowhere --ticket T-1", env)
    _, err = await asyncio.wait_for(missing.communicate(), 60)
    assert missing.returncode == 2
    assert err.decode().startswith("No target recipe-nowhere: an admin registers it first")
    env["SIGNOFF_TOKEN"] = refunds.world.admin
    queue = refunds.world.queue_slug
    other = await run(refunds, f"{agent} register --target refunds --queue {queue}", env)
    _, err = await asyncio.wait_for(other.communicate(), 60)
    assert other.returncode == 2
    assert err.decode().strip() == (
        "Target refunds is not as this recipe needs: agentExecutes is false, not true; "
        "amendmentsNeedProposer is true, not false."
    )
