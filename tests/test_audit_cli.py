"""``signoff audit``: the public key (also at the well-known path), a second key refused
at start, checkpoints, and an export that verifies offline."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from httpx import AsyncClient

from signoff.evidence.sealing import new_key_text
from tests.helpers import GraphQLClient, build_world
from tests.processes import run_cli, signoff_env


async def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``signoff`` in a thread: the test's own app keeps running its event service, whose
    stamping round would otherwise hold the feed's lock while the loop waits."""
    return await asyncio.to_thread(run_cli, *args, env=env)


async def test_the_public_key_is_served_at_the_well_known_path(
    client: AsyncClient, database_url: str
) -> None:
    response = await client.get("/.well-known/signoff-audit-key")
    assert response.status_code == 200
    printed = await cli("audit", "public-key", env=signoff_env(database_url))
    assert printed.returncode == 0, printed.stderr
    assert response.text == printed.stdout
    assert printed.stdout.startswith("ed25519:")


async def test_another_signing_key_is_refused_at_start_in_one_sentence(
    gql: GraphQLClient, database_url: str
) -> None:
    await build_world(gql)  # audited: the log is not empty
    env = signoff_env(database_url)
    signed = await cli("audit", "checkpoint", env=env)
    assert signed.returncode == 0, signed.stderr
    assert json.loads(signed.stdout)["size"] > 0
    other = {**env, "SIGNOFF_AUDIT_SIGNING_KEY": new_key_text()}
    for command in (["audit", "checkpoint"], ["serve", "--port", "9"]):
        refused = await cli(*command, env=other)
        assert refused.returncode == 2, refused.stderr
        message = refused.stderr.strip().splitlines()[-1]
        assert message == (
            "error: The audit signing key in SIGNOFF_AUDIT_SIGNING_KEY is not the one this "
            "database's checkpoints are signed with; set SIGNOFF_AUDIT_SIGNING_KEY to the "
            "original key, or point SIGNOFF_AUDIT_SIGNING_KEY_FILE at the original key file."
        )


async def test_an_export_verifies_offline_and_a_tampered_copy_does_not(
    gql: GraphQLClient, database_url: str, tmp_path: Path
) -> None:
    world = await build_world(gql)
    proposal = (await world.propose())["proposal"]
    await world.decide(world.reviewers[0], proposal)
    env = signoff_env(database_url)
    assert (await cli("audit", "checkpoint", env=env)).returncode == 0
    key = tmp_path / "audit.pub"
    key.write_text((await cli("audit", "public-key", env=env)).stdout)
    exported = await cli("audit", "export", env=env)
    assert exported.returncode == 0, exported.stderr
    log = tmp_path / "log.jsonl"
    log.write_text(exported.stdout)
    # Offline: no database in the environment at all.
    offline = {k: v for k, v in env.items() if not k.startswith("SIGNOFF_")}
    checked = await cli("audit", "verify", str(log), "--public-key", str(key), env=offline)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("OK: ")
    lines = exported.stdout.splitlines()
    forged = [line.replace('"approval.approved"', '"approval.rejected"') for line in lines]
    assert forged != lines
    log.write_text("\n".join(forged) + "\n")
    caught = await cli("audit", "verify", str(log), "--public-key", str(key), env=offline)
    assert caught.returncode == 1
    assert caught.stdout.startswith("FAILED at position ")
