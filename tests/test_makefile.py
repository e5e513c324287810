"""`make test` prepares what its tests need from the project's own files, and says what to
install when the machine lacks a part (issue 40: only `.ci/run` used to install the test
OpenID provider, so the README's test command failed on a fresh clone)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.machine import missing
from tests.processes import ROOT

MAKE = shutil.which("make") or "make"


def make(*args: str, path: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MAKE, "--no-print-directory", *args],
        cwd=cwd,
        env={"PATH": path, "HOME": "/nonexistent"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def node_packages() -> list[str]:
    declared = re.search(r"^NODE_PACKAGES := (.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert declared is not None
    return declared.group(1).split()


def test_every_folder_of_node_packages_the_tests_run_is_installed_by_make_test() -> None:
    locked = {
        str(lock.parent.relative_to(ROOT))
        for lock in ROOT.glob("**/package-lock.json")
        if "node_modules" not in lock.parts
    }
    assert locked <= set(node_packages())
    rules = make("-pn", "test", path="/usr/bin:/bin").stdout
    test_prerequisites = re.search(r"^test-deps: (.*)$", rules, re.M)
    assert test_prerequisites is not None
    for folder in node_packages():
        assert f"{folder}/node_modules/.installed" in test_prerequisites.group(1)


def test_without_npm_make_says_what_to_install_and_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "package"
    folder.mkdir()
    for name in ("package.json", "package-lock.json"):
        shutil.copy(ROOT / "tests" / "oidc_provider" / name, folder / name)
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")

    # Only make and the shell: no npm on the PATH.
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "make").symlink_to(MAKE)
    done = make("package/node_modules/.installed", path=str(bare), cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "make test: no npm, so the tests that need package skip: "
        "install Node.js 18 or later and npm (apt-get install nodejs npm)"
    )
    assert not (folder / "node_modules").exists()


def test_with_npm_make_installs_the_lock_once(tmp_path: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        missing("needs npm (apt-get install nodejs npm)")
    folder = tmp_path / "package"
    folder.mkdir()
    (folder / "package.json").write_text('{"name": "empty", "private": true}\n')
    (folder / "package-lock.json").write_text(
        '{"name": "empty", "lockfileVersion": 3, "requires": true,'
        ' "packages": {"": {"name": "empty"}}}\n'
    )
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    path = f"{Path(npm).parent}:/usr/bin:/bin"

    first = make("package/node_modules/.installed", path=path, cwd=tmp_path)
    again = make("package/node_modules/.installed", path=path, cwd=tmp_path)

    assert first.returncode == 0, first.stdout + first.stderr
    assert "npm ci in package" in first.stdout
    assert (folder / "node_modules" / ".installed").exists()
    assert "is up to date" in again.stdout
