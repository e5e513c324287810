"""A non-editable install carries every file the package reads at run time: the console's
and GraphiQL's static files and Alembic's migration template are declared package data."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.processes import ROOT

PACKAGE = ROOT / "signoff"


def declared() -> set[Path]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["signoff"]
    return {path for pattern in patterns for path in PACKAGE.glob(pattern) if path.is_file()}


def test_static_files_and_the_migration_template_are_package_data() -> None:
    files = declared()
    static = {p for p in (PACKAGE / "static").rglob("*") if p.is_file()}
    assert static, "signoff/static is empty"
    assert static - files == set()
    assert PACKAGE / "migrations" / "script.py.mako" in files
    pages = (
        "console/index.html",
        "console/app.js",
        "console/views/tasks.js",
        "vendor/preact-htm.module.js",
        "graphiql/index.html",
    )
    for page in pages:
        assert PACKAGE / "static" / page in files
