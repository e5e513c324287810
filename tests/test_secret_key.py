"""Processes whose secret key is not the one the database was sealed with refuse to start.

Without ``SIGNOFF_SECRET_KEY`` a process started from another directory used to make a
new ``signoff.key`` and fail every delivery with ``SIGNING_SECRET_UNREADABLE``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from signoff.evidence.sealing import new_key_text
from tests.conftest import fresh_database
from tests.processes import free_port, run_cli, serving, signoff_env
from tests.readme_shell import page

# A refused start ends at once; a start that is not refused would serve until this passes.
REFUSED_WITHIN = 30

HOW_TO_FIX = (
    "does not match the one this database was sealed with; set SIGNOFF_SECRET_KEY to the "
    "original key, or point SIGNOFF_SECRET_KEY_FILE at the original key file."
)


@pytest.fixture
def own_database(tmp_path: Path) -> Iterator[str]:
    """A database of this test's own: the suite's shares one key with every other test."""
    with fresh_database(tmp_path) as url:
        yield url


def without_key(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k != "SIGNOFF_SECRET_KEY"}


def assert_refused(*args: str, env: dict[str, str], message: str, cwd: Path | None = None) -> None:
    extra = {"cwd": cwd} if cwd is not None else {}
    result = run_cli(*args, env=env, timeout=REFUSED_WITHIN, **extra)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == f"error: {message}"
    assert result.stdout == ""


def test_serve_and_worker_refuse_a_key_other_than_the_databases(own_database: str) -> None:
    env = signoff_env(own_database)
    with serving(env):
        pass  # the first start records which key the database is sealed with
    other = signoff_env(own_database, SIGNOFF_SECRET_KEY=new_key_text())
    message = f"The secret key in SIGNOFF_SECRET_KEY {HOW_TO_FIX}"
    assert_refused("serve", "--port", str(free_port()), env=other, message=message)
    # Refused before it connects to Redis, which is not there.
    unreachable_redis = {**other, "SIGNOFF_REDIS_URL": "redis://127.0.0.1:9/0"}
    assert_refused("worker", env=unreachable_redis, message=message)
    with serving(env):
        pass  # the original key still starts


def test_a_key_file_made_in_another_directory_is_refused(own_database: str, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    env = without_key(signoff_env(own_database))
    with serving(env, cwd=first):
        pass
    original = (first / "signoff.key").read_text().strip()

    stray = (second / "signoff.key").resolve()
    message = f"The secret key in the key file {stray} (created just now) {HOW_TO_FIX}"
    assert_refused("serve", "--port", str(free_port()), env=env, cwd=second, message=message)
    assert stray.read_text().strip() != original

    with serving({**env, "SIGNOFF_SECRET_KEY": original}, cwd=second):
        pass
    with serving({**env, "SIGNOFF_SECRET_KEY_FILE": str(first / "signoff.key")}, cwd=second):
        pass
    with serving(env, cwd=first):
        pass


def test_the_docs_show_the_refusal_as_printed() -> None:
    """How Signoff works, "Roles and tokens" (docs/concepts.md), prints the refusal."""
    stray = "/srv/other/signoff.key"
    printed = f"error: The secret key in the key file {stray} (created just now) {HOW_TO_FIX}"
    assert printed in page("docs/concepts.md")


def test_a_malformed_key_is_refused_without_a_traceback(own_database: str) -> None:
    env = signoff_env(own_database, SIGNOFF_SECRET_KEY="not base64!")
    message = "The secret key in SIGNOFF_SECRET_KEY is not base64."
    assert_refused("serve", "--port", str(free_port()), env=env, message=message)
