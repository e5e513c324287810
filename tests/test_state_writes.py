"""Nothing outside the transition core writes a state column (docs/design.md section 7).

A state column is the column a lifecycle of the core keeps its states in (``state``,
``status``, ``circuit_state``, ``paused_at``, ``retired_at``, ``disabled_at``, …): the
list is read from the lifecycles themselves, so a new lifecycle's column is guarded at
once. The scan reads every module of ``signoff/`` except ``signoff/resolvers/core/`` (the
core) and ``signoff/migrations/`` (schema changes and backfills), and reports each
``file:line`` that sets one:

* ``update(...).values(col=…)`` or ``.values({"col": …})``, and an upsert's ``set_``;
* ``row.col = …`` (an ORM attribute change) and ``setattr(row, "col", …)``;
* ``values["col"] = …`` (a dict of values built up for a statement);
* SQL text that says ``UPDATE … SET col``.

Allowed, because creating a row is not a transition: a new row's first state, given to
the model's constructor (``Proposal(state=…)``) or to an ``insert(...).values(…)``.
Values handed to the core's own ``move`` (``values={"state": case(...)}``) are allowed
too: the core checks them against the edge.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import signoff.resolvers.core as core
from signoff.resolvers.core.transitions import Lifecycle
from tests.processes import ROOT

SOURCE = ROOT / "signoff"
EXEMPT = (SOURCE / "resolvers" / "core", SOURCE / "migrations")
INSERTS = frozenset({"insert", "Insert"})


def state_columns() -> frozenset[str]:
    """The column of every lifecycle the core defines."""
    columns: set[str] = set()
    for module in pkgutil.iter_modules(core.__path__):
        loaded = importlib.import_module(f"{core.__name__}.{module.name}")
        for value in vars(loaded).values():
            if isinstance(value, Lifecycle):
                columns.add(value.state_field)
    return frozenset(columns)


COLUMNS = state_columns()
SQL_UPDATE = re.compile(
    rf"\bUPDATE\b[^;]*\bSET\b[^;]*\b({'|'.join(sorted(COLUMNS))})\s*=", re.IGNORECASE | re.DOTALL
)


def _is_insert(call: ast.Call) -> bool:
    """Whether ``….values(…)`` is chained on an ``insert(…)``."""
    node: ast.expr = call.func
    while isinstance(node, ast.Call | ast.Attribute):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in INSERTS:
                return True
            node = node.func
        else:
            node = node.value
    return False


def _keys(node: ast.expr) -> Iterator[str]:
    """The column names a ``{...}`` of values sets (string keys and ``Model.col`` keys)."""
    if isinstance(node, ast.Dict):
        for key in node.keys:
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                yield key.value
            elif isinstance(key, ast.Attribute):
                yield key.attr


def _dicts(scope: list[ast.AST]) -> dict[str, list[ast.expr]]:
    """The dict literals assigned to each name in a function (or module), given as its
    nodes, so that ``.values(**changes)`` is judged by what ``changes`` was built from."""
    named: dict[str, list[ast.expr]] = {}
    for node in scope:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    named.setdefault(target.id, []).append(node.value)
    return named


def _set(node: ast.expr, named: dict[str, list[ast.expr]]) -> Iterator[str]:
    """The state columns a mapping of values sets: a literal, or a name bound to one."""
    literals = named.get(node.id, []) if isinstance(node, ast.Name) else [node]
    for literal in literals:
        yield from (key for key in _keys(literal) if key in COLUMNS)


def _written(node: ast.AST, named: dict[str, list[ast.expr]]) -> Iterator[str]:
    """The state columns one node writes, if it is a write."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        method = node.func.attr
        if method == "values" and not _is_insert(node):
            yield from (k.arg for k in node.keywords if k.arg in COLUMNS)
            for arg in [*node.args, *(k.value for k in node.keywords if k.arg is None)]:
                yield from _set(arg, named)
        if method == "on_conflict_do_update":
            for keyword in node.keywords:
                if keyword.arg == "set_":
                    yield from _set(keyword.value, named)
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr":
        name = node.args[1] if len(node.args) > 1 else None
        if isinstance(name, ast.Constant) and name.value in COLUMNS:
            yield str(name.value)
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            on_self = (
                isinstance(target, ast.Attribute) and getattr(target.value, "id", "") == "self"
            )
            if isinstance(target, ast.Attribute) and target.attr in COLUMNS and not on_self:
                yield target.attr
            if isinstance(target, ast.Subscript):
                key = target.slice
                if isinstance(key, ast.Constant) and key.value in COLUMNS:
                    yield str(key.value)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        found = SQL_UPDATE.search(node.value)
        if found:
            yield found[1]


def state_writes(root: Path = SOURCE) -> list[str]:
    """``file:line: column`` for each write of a state column outside the core."""
    found: list[tuple[str, int, str]] = []
    for path in sorted(root.rglob("*.py")):
        if any(path.is_relative_to(exempt) for exempt in EXEMPT):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        # Each scope's nodes walked once, for its dicts and for its writes (the module's
        # include its functions'): walking the trees was most of the scan's time.
        everything = list(ast.walk(tree))
        scopes = [everything]
        scopes += [list(ast.walk(n)) for n in everything if isinstance(n, ast.AsyncFunctionDef)]
        for nodes in scopes:
            named = _dicts(nodes)
            for node in nodes:
                for column in _written(node, named):
                    line = getattr(node, "lineno", 0)
                    found.append((str(path.relative_to(root.parent)), line, column))
    return [f"{path}:{line}: {column}" for path, line, column in sorted(set(found))]


def test_the_state_columns_are_read_from_the_lifecycles() -> None:
    assert {"state", "status", "circuit_state", "paused_at", "retired_at"} <= COLUMNS
    assert {"disabled_at", "role", "revoked_at"} <= COLUMNS


def test_nothing_outside_the_core_writes_a_state_column() -> None:
    writes = state_writes()
    assert not writes, "state changes go through the transition core:\n" + "\n".join(writes)


def test_the_scan_finds_each_kind_of_write(tmp_path: Path) -> None:
    (tmp_path / "writes.py").write_text(
        "stmt = update(Target).where(x).values(circuit_state='OPEN')\n"
        "stmt = update(Target).values({Target.paused_at: now})\n"
        "target.retired_at = now\n"
        "setattr(actor, 'role', role)\n"
        "values['state'] = 'QUEUED'\n"
        "upsert = insert(Incident).on_conflict_do_update(set_={'state': 'OPEN'})\n"
        "sql = 'UPDATE proposals SET state = :s WHERE id = :id'\n"
        "async def reopen():\n"
        "    again = {'state': 'OPEN'}\n"
        "    await session.exec(upsert.on_conflict_do_update(set_=again))\n"
    )
    (tmp_path / "creations.py").write_text(
        "row = Proposal(state='QUEUED')\n"
        "stmt = insert(Incident).values(state='OPEN').returning(Incident)\n"
        "moved = await PROPOSAL.move(work, edge, pid, values={'state': 'QUEUED'})\n"
        "self.state = 'connected'\n"
        "snapshot = {'state': str(row.state)}\n"
    )
    writes = state_writes(tmp_path)
    assert [w.split("/")[-1] for w in writes] == [
        "writes.py:1: circuit_state",
        "writes.py:2: paused_at",
        "writes.py:3: retired_at",
        "writes.py:4: role",
        "writes.py:5: state",
        "writes.py:6: state",
        "writes.py:7: state",
        "writes.py:10: state",
    ]
