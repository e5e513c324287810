"""The format of change events between processes (Redis pub/sub), and how it may change.

A message is a JSON array of changes, each marked with its format's major version
(``"v"``), so that processes of two releases read each other's messages during a rolling
deploy. What may change within a version, and what needs a new one: docs/design.md
section 8.6.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from signoff import jsoncodec
from signoff.constants import EVENTS_WIRE_VERSION
from signoff.events.hub import Change

logger = logging.getLogger("signoff.events.wire")

VERSION_KEY = "v"
# The version of a change that carries no marker (docs/design.md section 8.6).
UNMARKED_VERSION = 1
READABLE_VERSIONS = frozenset({EVENTS_WIRE_VERSION})


def encode(changes: Sequence[Change]) -> bytes:
    """One message carrying ``changes``, each marked with this release's wire version
    (compact UTF-8 JSON, by orjson: a worker publishes every change it writes)."""
    items = [{**change.to_wire(), VERSION_KEY: EVENTS_WIRE_VERSION} for change in changes]
    return jsoncodec.dumps(items)


def decode(message: bytes | str) -> list[Change]:
    """The changes of ``message`` this process can read; the others are logged and skipped."""
    try:
        items = json.loads(message)
    except ValueError:
        logger.warning("skipped an event message that is not JSON")
        return []
    if not isinstance(items, list):
        logger.warning("skipped an event message that is not an array of changes")
        return []
    changes = [_decode_change(item) for item in items]
    return [change for change in changes if change is not None]


def _decode_change(item: Any) -> Change | None:
    if not isinstance(item, dict):
        logger.warning("skipped a change event that is not an object")
        return None
    version = item.get(VERSION_KEY, UNMARKED_VERSION)
    # ``type(...) is int``: neither a bool (True == 1) nor an unhashable value passes.
    is_int = type(version) is int
    if not (is_int and version in READABLE_VERSIONS):
        shown = version if is_int else "unknown"  # anything else could be content
        logger.warning(
            "skipped a change event of wire version %s (this process reads %s); "
            "it is read from the database instead",
            shown,
            sorted(READABLE_VERSIONS),
        )
        return None
    try:
        return Change.from_wire(item)
    except (KeyError, TypeError, ValueError) as exc:
        logger.warning("skipped an unreadable change event (%s)", type(exc).__name__)
        return None
