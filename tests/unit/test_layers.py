"""The layout is the architecture: no package imports a layer above it.

``models`` (tables) ← ``resolvers`` (business rules) ← ``schema`` and ``jobs`` (the
ways in) ← ``live`` (the live runtime: websockets and broadcast groups, which execute
the schema) ← ``web`` (the ASGI app, its pages and middleware) and ``cli`` (the process).
``events`` (feed and hub) sits beside ``models``: resolvers and the ways in may use it; it
uses neither. ``metrics`` sits between ``resolvers`` and the ways in. In ``evidence``, the
auditor's verifier imports nothing of Signoff and the keys (``sealing``, ``audit_key``)
nothing beyond ``evidence``, so every layer may use them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import signoff

PACKAGE = Path(signoff.__file__).parent
EVERYTHING = {p.stem for p in PACKAGE.iterdir() if p.suffix == ".py" or p.is_dir()}

# For each package (or one file, by its path), the signoff packages and modules it must
# never import.
FORBIDDEN: dict[str, set[str]] = {
    "models": {"resolvers", "schema", "jobs", "events", "metrics", "live", "web", "cli"},
    "events": {"resolvers", "schema", "jobs", "metrics", "live", "web", "cli"},
    "resolvers": {"schema", "jobs", "metrics", "live", "web", "cli"},
    "metrics": {"schema", "jobs", "live", "web", "cli"},
    "jobs": {"schema", "live", "web", "cli"},
    "schema": {"jobs", "live", "web", "cli"},
    "live": {"jobs", "web", "cli"},
    "web": {"cli"},
    # The auditor's verifier stands alone: it imports nothing of Signoff.
    "evidence/verify.py": EVERYTHING,
    "evidence/sealing.py": EVERYTHING - {"evidence"},
    "evidence/audit_key.py": EVERYTHING - {"evidence"},
}

# What may stay at the package's root: what every room uses (settings, the database, the
# clock, errors, logs, JSON and digests), the command line, and the delivery client.
ROOT_MODULES = {
    "__init__",
    "__main__",
    "cli",
    "clock",
    "config",
    "constants",
    "database",
    "delivery",
    "destinations",
    "digest",
    "errors",
    "internals",
    "jsoncodec",
    "jsonvalues",
    "logs",
    "metrics",
    "migrate",
    "oidc_settings",
    "outages",
    "patches",
    "receiver",
    "sqlite_driver",
    "validation",
    "webhooks",
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
    """The files of a package, or the one file of a top-level module or a path."""
    module = PACKAGE / (package if package.endswith(".py") else f"{package}.py")
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


def _module_name(path: Path) -> str:
    parts = ("signoff", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Each module of the package and the modules of it that it imports anywhere (type
    checking and function bodies too: a circle there is a circle in the design)."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # ``from package import module`` imports the module, not the package's names.
                named = [f"{node.module}.{alias.name}" for alias in node.names]
                found = [m for m in named if m in modules]
                imported = found or [node.module]
            elif isinstance(node, ast.Import):
                imported = [alias.name for alias in node.names]
            else:
                continue
            graph[name] |= {m for m in imported if m in modules and m != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


# GraphQL types that refer to each other (a proposal's task, attempts and timeline, a
# task's, an attempt's or an incident's proposal, a timeline entry's incident; a viewer's
# queues, a queue's members) meet through ``strawberry.lazy``: the schema's own shape, not
# a dependency between concepts.
MUTUALLY_RECURSIVE_TYPES = [
    ["signoff.schema.access.actor", "signoff.schema.approval.queue"],
    [
        "signoff.schema.approval.proposal",
        "signoff.schema.approval.task",
        "signoff.schema.approval.timeline",
        "signoff.schema.delivery.delivery",
        "signoff.schema.delivery.incident",
    ],
]


def test_no_import_circle() -> None:
    assert _circles(_import_graph()) == MUTUALLY_RECURSIVE_TYPES


def test_the_root_holds_only_what_every_room_uses() -> None:
    """A new module goes into its room (``web``, ``evidence``, a layer), not the drawer."""
    at_root = {p.stem for p in PACKAGE.glob("*.py")}
    assert at_root - ROOT_MODULES == set()
