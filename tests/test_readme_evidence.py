"""The README's "Evidence and audits", run as printed after the worked example: a
checkpoint, an export and the public key, ``verify`` offline, and the worked example's
decision receipt fetched and checked with ``verify-receipt``.

The commands run through ``bash`` in a directory of their own (with the repository's
``.venv`` linked into it), so the files they write stay out of the working tree; only
the placeholders in angle brackets and the server's port are replaced.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

from tests.live import Server
from tests.processes import ROOT, free_port, signoff_env
from tests.readme_shell import Shell, commands, page_section, sh_blocks
from tests.redis_keys import unique_queue
from tests.test_readme import (
    Readme,
    create_queue_and_target,
    delivering,
    forget_jobs,
    propose_review_decide,
    token_create,
)

VERIFIED = re.compile(r"^OK: (\d+) records, (\d+) signed checkpoints; positions below (\d+)")


async def test_the_evidence_section_runs_as_printed(
    serve: Callable[..., Awaitable[Server]], database_url: str, tmp_path: Path
) -> None:
    queue = unique_queue()
    server = await serve(SIGNOFF_EMBEDDED_WORKER="1", SIGNOFF_ARQ_QUEUE=queue)
    # As a reader comes to this section: after the worked example, its receiver running
    # where the README starts it and the refund delivered to it (the records and their
    # count are those of an applied proposal, not of a failed attempt).
    shell = Shell(signoff_env(database_url), ports={9000: free_port()})
    walkthrough = page_section("README.md", "## A worked example in GraphiQL")
    [receiver] = [c for b in sh_blocks(walkthrough) for c in commands(b) if " receiver " in c]
    async with Readme.against(server) as readme:
        readme.ports = shell.ports
        ops = await token_create(database_url, "--name", "ops", "--role", "admin")
        await create_queue_and_target(readme, ops)
        shell.values["the signingSecret"] = readme.values["the signingSecret"]
        with delivering(database_url, queue, tmp_path), shell.background(receiver):
            agent = await token_create(database_url, "--name", "refund-bot", "--role", "agent")
            alice = await token_create(
                database_url, "--name", "alice", "--role", "reviewer", "--queue", "payments"
            )
            await propose_review_decide(readme, ops=ops, agent=agent, alice=alice)
            await readme.applied(ops, readme.values["the proposal id"])
            await forget_jobs(queue, readme.values["the proposal id"])
    proposal_id = readme.values["the proposal id"]
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    values = {"<the ops token>": ops, "<the proposal id>": proposal_id}
    printed: list[str] = []
    for block in sh_blocks(page_section("README.md", "## Evidence and audits")):
        for command in commands(block):
            for placeholder, value in values.items():
                command = command.replace(placeholder, value)
            command = command.replace("127.0.0.1:8000/", f"127.0.0.1:{server.port}/")
            result = await asyncio.to_thread(
                subprocess.run,
                ["bash", "-c", command],
                env=signoff_env(database_url),
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert result.returncode == 0, f"{command}\n{result.stdout}{result.stderr}"
            printed.append(result.stdout)
    checkpoint = json.loads((tmp_path / "checkpoint.json").read_text())
    verified = [VERIFIED.match(out) for out in printed if out.startswith("OK")]
    assert len(verified) == 2, printed
    records, signed, through = (int(n) for n in verified[0].groups())  # type: ignore[union-attr]
    assert records == checkpoint["size"] == through and signed >= 1
    receipt = json.loads((tmp_path / "receipt.json").read_text())
    assert receipt["proposal"]["id"] == proposal_id
    assert receipt["proposal"]["digest"] == readme.values["the payloadDigest"]
    assert [a["decision"] for a in receipt["approvals"]] == ["APPROVED"]
    assert receipt["records"] and receipt["notYetCheckpointed"] == []
    assert receipt["checkpoint"]["size"] == checkpoint["size"]
    # As the README says it prints: the worked example's count.
    readme_text = page_section("README.md", "## Evidence and audits")
    assert f"`OK: {records} records, 1 signed checkpoints; positions below {records}" in (
        " ".join(readme_text.split())
    ), f"the worked example's export has {records} records"
