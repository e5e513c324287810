"""The layout is the architecture: no package imports a layer above it.

``models`` (tables) ← ``resolvers`` (business rules) ← ``schema`` and ``jobs`` (the
ways in) ← ``app`` and ``cli`` (the process). ``events`` (feed and hub) sits beside
``models``: resolvers and the ways in may use it; it uses neither. ``metrics`` (the
module of Prometheus metrics) sits between ``resolvers`` and the ways in: it reads the
operations figures, and schema, jobs and the process count events into it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import signoff

PACKAGE = Path(signoff.__file__).parent

# For each package, the signoff packages and modules it must never import.
FORBIDDEN: dict[str, set[str]] = {
    "models": {"resolvers", "schema", "jobs", "events", "metrics", "app", "cli"},
    "events": {"resolvers", "schema", "jobs", "metrics", "app", "cli"},
    "resolvers": {"schema", "jobs", "metrics", "app", "cli"},
    "metrics": {"schema", "jobs", "app", "cli"},
    "jobs": {"schema", "app", "cli"},
    "schema": {"jobs", "app", "cli"},
}


def _imports(path: Path) -> set[str]:
    """The ``signoff`` subpackage or module each import in ``path`` names."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        names |= {m.split(".")[1] for m in modules if m.startswith("signoff.")}
    return names


def _files(package: str) -> list[Path]:
    """The files of a package, or the one file of a top-level module."""
    module = PACKAGE / f"{package}.py"
    files = [module] if module.is_file() else sorted((PACKAGE / package).rglob("*.py"))
    assert files, f"signoff.{package} not found"
    return files


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_package_imports_a_layer_above_it(package: str) -> None:
    upward = {
        f"{path.relative_to(PACKAGE)} imports signoff.{name}"
        for path in _files(package)
        for name in _imports(path) & FORBIDDEN[package]
    }
    assert not upward, sorted(upward)
