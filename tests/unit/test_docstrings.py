"""Docstrings say what a thing is and why, in a line or a short paragraph; design detail
lives in docs/design.md, figures in BENCHMARKS.md. The bounds keep them from regrowing."""

from __future__ import annotations

import ast
from pathlib import Path

SIGNOFF = Path(__file__).resolve().parents[2] / "signoff"
# Lines of a docstring (as ``ast.get_docstring`` gives it): a summary, a blank line and a
# short paragraph fit; a second paragraph of mechanics belongs in docs/design.md.
MODULE_MAX_LINES = 8
DEFINITION_MAX_LINES = 6

DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _too_long(source: str) -> list[tuple[int, int, int]]:
    """(line, lines, bound) of every docstring in ``source`` longer than its bound."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, DOCUMENTED):
            continue
        docstring = ast.get_docstring(node)
        if docstring is None:
            continue
        bound = MODULE_MAX_LINES if isinstance(node, ast.Module) else DEFINITION_MAX_LINES
        lines = len(docstring.splitlines())
        if lines > bound:
            found.append((node.body[0].lineno, lines, bound))
    return found


def test_no_docstring_longer_than_a_short_paragraph() -> None:
    too_long = [
        f"{path.relative_to(SIGNOFF.parent)}:{line}: {lines} lines (at most {bound})"
        for path in sorted(SIGNOFF.rglob("*.py"))
        for line, lines, bound in _too_long(path.read_text())
    ]
    assert too_long == []


def test_the_scan_sees_modules_classes_and_functions() -> None:
    def docstring(lines: int, indent: str = "") -> str:
        return f'{indent}"""' + f"\n{indent}".join(["Line."] * lines) + '"""\n'

    source = (
        docstring(MODULE_MAX_LINES + 1)  # line 1
        + "class A:\n"
        + docstring(DEFINITION_MAX_LINES + 1, "    ")  # line 11
        + "    async def f(self) -> None:\n"
        + docstring(DEFINITION_MAX_LINES, "        ")  # within its bound
        + "def g() -> None:\n"
        + docstring(DEFINITION_MAX_LINES + 1, "    ")  # line 26
    )
    assert sorted(_too_long(source)) == [
        (1, MODULE_MAX_LINES + 1, MODULE_MAX_LINES),
        (11, DEFINITION_MAX_LINES + 1, DEFINITION_MAX_LINES),
        (26, DEFINITION_MAX_LINES + 1, DEFINITION_MAX_LINES),
    ]
