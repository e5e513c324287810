"""The install a newcomer gets: the lock files pin what pyproject.toml pins, with hashes,
and a wheel built from the source tree, installed without ``-e`` into a fresh venv,
carries every file of the package and serves GraphiQL, the console and GraphQL.

The wheel is built with the build backend already in the test venv and installed with
``--no-deps --no-index``; the fresh venv reads its dependencies from this venv's
site-packages through a ``.pth`` file (which does not carry the editable install of
Signoff along), so the test needs no network and takes seconds.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import checked_once
from tests.processes import ROOT, serving, signoff_env

REQUIREMENTS = ROOT / "requirements"
# `name==version [; marker]` at the start of a lock entry, with the entry's hashes after it.
LOCKED = re.compile(
    r"^([A-Za-z0-9._-]+)==([^\s;]+)(?: ;[^\\\n]*)?((?:\s*\\\n\s+--hash=sha256:[0-9a-f]{64})*)",
    re.M,
)
ASSET = re.compile(r'(?:src|href)="(/static/[^"]+)"')
MODULE_IMPORT = re.compile(r'from "\./([^"]+)"')
PIP = [sys.executable, "-m", "pip", "--quiet", "--disable-pip-version-check"]


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(lock: str) -> dict[str, str]:
    """The versions a lock file pins, every one of them with at least one hash."""
    text = (REQUIREMENTS / lock).read_text()
    entries = LOCKED.findall(text)
    assert entries, lock
    for name, _, hashes in entries:
        assert "--hash=sha256:" in hashes, f"{lock}: {name} has no hash"
    assert len(entries) == len(re.findall(r"^\S+==", text, re.M))
    return {normalised(name): version for name, version, _ in entries}


def pins(requirements: list[str]) -> dict[str, str]:
    """``name[extras]==version [; marker]`` requirements as {name: version}; every one is
    pinned."""
    pinned = {}
    for requirement in requirements:
        name, sep, version = requirement.split(";")[0].strip().partition("==")
        assert sep, f"{requirement} is not pinned"
        pinned[normalised(name.split("[")[0])] = version
    return pinned


def test_the_locks_pin_what_pyproject_pins_with_hashes() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    build, serve, test = locked("build.txt"), locked("serve.txt"), locked("test.txt")
    assert pins(config["build-system"]["requires"]).items() <= build.items()
    assert pins(config["project"]["dependencies"]).items() <= serve.items()
    assert pins(config["project"]["optional-dependencies"]["test"]).items() <= test.items()
    # The test lock is constrained to serving's: the same release of everything both have.
    assert serve.items() <= test.items()
    assert {"pytest", "mypy", "ruff", "playwright"}.isdisjoint(serve)
    shared = build.keys() & serve.keys()
    assert {name: build[name] for name in shared} == {name: serve[name] for name in shared}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the source tree (building leaves ``build/`` and
    ``*.egg-info`` behind, which the working tree should not get)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "signoff", source / "signoff", ignore=shutil.ignore_patterns("__pycache__")
    )
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", out, source],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (built,) = out.glob("signoff-*.whl")
    return built


def test_the_wheel_carries_every_file_of_the_package(wheel: Path) -> None:
    package = ROOT / "signoff"
    files = {
        path.relative_to(ROOT).as_posix()
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    with zipfile.ZipFile(wheel) as archive:
        carried = {name for name in archive.namelist() if name.startswith("signoff/")}
    assert files - carried == set()
    for needed in ("signoff/migrations/script.py.mako", "signoff/static/console/index.html"):
        assert needed in carried


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with the wheel installed in it, not editable; yields its bin/."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [*PIP, "--python", python, "install", "--no-deps", "--no-index", wheel],
        check=True,
        capture_output=True,
        timeout=120,
    )
    # Only now, so that pip saw no Signoff to replace: this venv's dependencies.
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    parent = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "signoff-test-dependencies.pth").write_text("\n".join(sorted(parent)))
    yield venv / "bin"


@checked_once
def test_an_installed_wheel_serves_graphiql_the_console_and_graphql(
    installed: Path, tmp_path: Path
) -> None:
    where = subprocess.run(
        [installed / "python", "-c", "import signoff; print(signoff.__file__)"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert Path(where).is_relative_to(installed.parent), where

    env = signoff_env(f"sqlite:///{tmp_path / 'signoff.db'}")
    made = subprocess.run(
        [installed / "signoff", "token", "create", "--name", "newcomer", "--role", "admin"],
        env=env,
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    token = made.stdout.strip().splitlines()[-1]

    serve = [str(installed / "signoff")]
    with serving(env, cwd=tmp_path, command=serve) as base, httpx.Client(base_url=base) as http:
        graphiql = http.get("/graphql", headers={"Accept": "text/html"})
        assert graphiql.status_code == 200
        assert "Signoff GraphiQL" in graphiql.text
        console = http.get("/")
        assert console.status_code == 200
        assets = ASSET.findall(graphiql.text) + ASSET.findall(console.text)
        assert len(assets) >= 6, assets
        app = http.get("/static/console/app.js").text
        assets += [f"/static/console/{name}" for name in MODULE_IMPORT.findall(app)]
        for asset in assets:
            answer = http.get(asset)
            assert answer.status_code == 200 and answer.content, asset

        query = {"query": "query { __typename viewer { actor { name } } }"}
        answer = http.post("/graphql", json=query, headers={"Authorization": f"Bearer {token}"})
        assert answer.json() == {
            "data": {"__typename": "Query", "viewer": {"actor": {"name": "newcomer"}}}
        }
