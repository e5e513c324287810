"""The TypeScript client (clients/typescript) under Node against a real ``signoff serve``:
typed refusals, propose, wait over graphql-ws, and one execution per approval."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from tests.client.conftest import Stage
from tests.client.test_client import target_name
from tests.faults.proxy import TcpProxy
from tests.machine import require_node_package
from tests.processes import ROOT

PACKAGE = ROOT / "clients" / "typescript"
# A script whose work is done ends well before the wait's own 60 s timeout would.
EXITS_WITHIN = 10


async def line_of(
    process: asyncio.subprocess.Process, stage: Stage, proxy: TcpProxy | None = None
) -> dict[str, Any]:
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), 60)
    except TimeoutError:
        raise AssertionError(await stuck(process, stage, proxy)) from None
    assert line, f"the agent ended early: {await stuck(process, stage, proxy)}"
    found: dict[str, Any] = json.loads(line)
    return found


async def stuck(process: asyncio.subprocess.Process, stage: Stage, proxy: TcpProxy | None) -> str:
    """What a failure's message shows of a script that said nothing more: its stderr, the
    connections it opened through the proxy, and the end of the server's log."""
    if process.returncode is None:
        process.kill()
    _, err = await asyncio.wait_for(process.communicate(), 10)
    log = stage.server.log.read_text(errors="replace").splitlines()[-20:]
    opened = "" if proxy is None else f"{proxy.accepted} connections through the proxy; "
    return (
        f"{opened}exit {process.returncode}; stderr: {err.decode(errors='replace')[-2000:]!r}"
        f"\n--- end of {stage.server.log.name} ---\n" + "\n".join(log)
    )


async def test_the_typescript_client_executes_once_per_approval(agent_stage: Stage) -> None:
    stage = agent_stage
    node = require_node_package(PACKAGE, "graphql-ws")
    env = {**os.environ, "SIGNOFF_URL": stage.server.url, "SIGNOFF_TOKEN": stage.world.agent}
    process = await asyncio.create_subprocess_exec(
        node,
        "test/agent.mjs",
        await target_name(stage),
        cwd=PACKAGE,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert await line_of(process, stage) == {
        "refused": "PAYLOAD_SCHEMA_INVALID",
        "typed": True,
        "pointer": "/amount",
    }
    proposed = await line_of(process, stage)
    assert proposed["state"] == "APPROVAL_REQUIRED"
    await asyncio.sleep(0.5)  # the agent follows the proposal over graphql-ws by now
    await stage.decide(proposed["proposed"])
    assert await line_of(process, stage) == {"executed": "refunded 120 EUR"}
    assert await line_of(process, stage) == {
        "replayed": True,
        "again": "refunded 120 EUR",
        "ran": 1,
    }
    other = await line_of(process, stage)
    await stage.decide(other["proposed"], "REJECTED", reason="Already refunded.")
    assert await line_of(process, stage) == {
        "notApproved": "NOT_APPROVED",
        "outcome": "rejected",
        "reason": "Already refunded.",
        "ran": 1,
    }
    assert await line_of(process, stage) == {
        "consumed": "EXECUTION_CONSUMED",
        "state": "APPLIED",
        "isAlready": False,
    }
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode()
    assert (await stage.proposal(proposed["proposed"]))["state"] == "APPLIED"


async def test_the_typescript_client_resumes_after_its_socket_is_cut(agent_stage: Stage) -> None:
    """The client's socket is cut while it waits and the proposal is approved during the
    outage: the client reconnects and resumes after its last cursor, so it still learns of
    the approval (a client resuming from now would wait past its deadline)."""
    stage = agent_stage
    node = require_node_package(PACKAGE, "graphql-ws")
    with TcpProxy("127.0.0.1", stage.server.port) as proxy:
        env = {
            **os.environ,
            "SIGNOFF_URL": f"http://127.0.0.1:{proxy.port}",
            "SIGNOFF_TOKEN": stage.world.agent,
        }
        process = await asyncio.create_subprocess_exec(
            node,
            "test/resume.mjs",
            await target_name(stage),
            cwd=PACKAGE,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        proposed = await line_of(process, stage, proxy)
        # Cut once the wait has had its first event over graphql-ws (a fixed pause was too
        # short on a loaded machine: the cut then came before any event).
        assert "following" in await line_of(process, stage, proxy)
        proxy.cut()
        await stage.decide(proposed["proposed"])  # the approval is made while the socket is down
        await asyncio.sleep(1)  # the client's reconnects are refused meanwhile
        proxy.restore()
        assert await line_of(process, stage, proxy) == {
            "outcome": "approved",
            "payload": {"amount": 120, "currency": "EUR"},
        }
        seen = await line_of(process, stage, proxy)
        # Events from before the cut and after it, none seen twice: the resumed
        # subscription started after the last cursor the first one delivered.
        assert seen["events"] >= 2 and seen["distinct"] == seen["events"], seen
        # The script ends by itself (it has no process.exit): no timer or socket the
        # client opened keeps Node alive once wait() returned.
        async with asyncio.timeout(EXITS_WITHIN):
            _, err = await process.communicate()
        assert process.returncode == 0, err.decode()
