"""What a new user reads when ``signoff serve`` starts: where the console and GraphiQL are,
the command that gives someone access on a fresh installation, one line for the whole
migration, and no library's warnings (issue 43, item 9)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.conftest import checked_once
from tests.processes import ROOT, free_port, run_cli, signoff_env

pytestmark = checked_once

SIGNOFF = ROOT / ".venv" / "bin" / "signoff"
READY = "Signoff is serving"


def started_output(env: dict[str, str], cwd: Path, logs: Path) -> list[str]:
    """The lines a real ``signoff serve`` started in ``cwd`` prints until it says it is
    serving."""
    port = free_port()
    log = logs / f"serve-{port}.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(SIGNOFF), "serve", "--port", str(port)],
            env=env,
            cwd=cwd,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while READY not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        time.sleep(0.2)  # the line after it, when there is one
    finally:
        process.terminate()
        process.wait(timeout=15)
    return [line.split(" ", 3)[-1] for line in log.read_text().splitlines()]


def test_a_fresh_start_says_where_to_go_and_what_to_run_next(tmp_path: Path) -> None:
    env = signoff_env(
        f"sqlite+aiosqlite:///{tmp_path / 'signoff.db'}",
        SIGNOFF_LOG_LEVEL="info",
        SIGNOFF_LOG_FORMAT="text",
        PYTHONWARNINGS="default",
    )
    lines = started_output(env, cwd=ROOT, logs=tmp_path)

    text = "\n".join(lines)
    assert "Running upgrade" not in text and "alembic" not in text, text
    assert "Warning" not in text and "deprecat" not in text.lower(), text
    [migrated] = [line for line in lines if line.startswith("signoff.migrate ")]
    assert "from an empty database to revision" in migrated
    [serving] = [line for line in lines if READY in line]
    base = serving.split("review console at ", 1)[1].split("/ ", 1)[0]
    assert serving.endswith(f"GraphiQL at {base}/graphql")
    [next_step] = [line for line in lines if "No one has access yet" in line]
    assert next_step.endswith("`.venv/bin/signoff token create --name ops --role admin`")


def test_a_later_start_names_no_migration_and_no_first_step(tmp_path: Path) -> None:
    env = signoff_env(
        f"sqlite+aiosqlite:///{tmp_path / 'signoff.db'}",
        SIGNOFF_LOG_LEVEL="info",
        SIGNOFF_LOG_FORMAT="text",
    )
    made = run_cli("token", "create", "--name", "ops", "--role", "admin", env=env)
    assert made.returncode == 0, made.stderr

    lines = started_output(env, cwd=tmp_path, logs=tmp_path)

    assert not [line for line in lines if "migrat" in line], lines
    assert not [line for line in lines if "No one has access" in line], lines
    assert [line for line in lines if READY in line]
