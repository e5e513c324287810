"""Figures live in BENCHMARKS.md, with the command that measured them; in code they go
stale without anyone noticing."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

SIGNOFF = Path(__file__).resolve().parents[2] / "signoff"
# A duration in (micro)seconds, a rate per second or a share of a time.
FIGURE = re.compile(r"\d[\d.,]*\s?(ms|µs)\b|\d[\d,]*\s?([a-z]+)?/s\b|\d+\s?%")

STATEMENT_STARTS = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT}


def _prose(source: str) -> list[tuple[int, str]]:
    """Comments and docstrings (every string that stands as a statement), by line."""
    found = []
    previous = tokenize.NEWLINE
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        standalone = token.type == tokenize.STRING and previous in STATEMENT_STARTS
        if token.type == tokenize.COMMENT or standalone:
            found.append((token.start[0], token.string))
        if token.type not in {tokenize.COMMENT, tokenize.NL}:
            previous = token.type
    return found


def test_no_measured_figure_in_a_comment_or_docstring() -> None:
    quoted = [
        f"{path.relative_to(SIGNOFF.parent)}:{line}: {match.group(0)}"
        for path in sorted(SIGNOFF.rglob("*.py"))
        for line, text in _prose(path.read_text())
        for match in [FIGURE.search(text)]
        if match
    ]
    assert quoted == []


def test_the_scan_sees_comments_and_docstrings() -> None:
    source = '"""Took 40 % of it."""\nx = "1 ms"  # 7,000 requests/s\n'
    assert [text for _, text in _prose(source) if FIGURE.search(text)] == [
        '"""Took 40 % of it."""',
        "# 7,000 requests/s",
    ]
