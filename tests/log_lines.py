"""Reading the JSON log lines of a process started by a test (``signoff.logs``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def log_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of ``path`` as JSON; a line that is not (a raw traceback) fails the test."""
    lines: list[dict[str, Any]] = []
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        try:
            lines.append(json.loads(text))
        except json.JSONDecodeError:
            raise AssertionError(f"{path.name}:{number} is not a JSON log line: {text}") from None
    return lines


def messages(lines: list[dict[str, Any]], starting: str) -> list[str]:
    return [line["message"] for line in lines if line["message"].startswith(starting)]


def problems(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lines at ERROR or above, and any that name an exception."""
    return [line for line in lines if line["level"] in {"ERROR", "CRITICAL"} or "exception" in line]
