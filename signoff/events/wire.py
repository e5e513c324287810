"""The format of change events between processes (Redis pub/sub), and how it may change.

A message is a JSON array of changes, each marked with its format's major version
(``"v"``), so that processes of two releases read each other's messages during a rolling
deploy. What may change within a version, and what needs a new one: docs/design.md
section 8.6.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlmodel import SQLModel

from signoff import jsoncodec
from signoff.constants import EVENTS_WIRE_RECORD_BYTES, EVENTS_WIRE_VERSION
from signoff.events.hub import Change
from signoff.models import Draft, HumanTask, Proposal
from signoff.models.base import UTCDateTime
from signoff.models.records import record_class, table_of

logger = logging.getLogger("signoff.events.wire")

VERSION_KEY = "v"
# The records a change carries (``Change.written``): the entity its writer changed, as the
# commit left it, each as the JSON text of its columns, so that a reader's frames need
# no read of their own. Optional: a change without it is read from the database.
WRITTEN_KEY = "written"
_CARRIED: dict[str, type[SQLModel]] = {"proposal": Proposal, "task": HumanTask, "draft": Draft}
# The version of a change that carries no marker (docs/design.md section 8.6).
UNMARKED_VERSION = 1
READABLE_VERSIONS = frozenset({EVENTS_WIRE_VERSION})


def encode(changes: Sequence[Change]) -> bytes:
    """One message carrying ``changes``, each marked with this release's wire version
    (compact UTF-8 JSON, by orjson: a worker publishes every change it writes)."""
    items = []
    for change in changes:
        item = {**change.to_wire(), VERSION_KEY: EVENTS_WIRE_VERSION}
        carried = _carried(change.written) if change.written else None
        if carried:
            item[WRITTEN_KEY] = carried
        items.append(item)
    return jsoncodec.dumps(items)


def _carried(written: Mapping[str, Any]) -> dict[str, str]:
    """The records of ``written`` a message carries, as JSON texts; one larger than
    ``EVENTS_WIRE_RECORD_BYTES`` is left to the readers' database (a message goes to
    every process)."""
    carried = {}
    for kind, model in _CARRIED.items():
        record = written.get(kind)
        if record is None:
            continue
        fields = {name: getattr(record, name) for name in _columns(model)}
        for name in _times(model):
            if fields[name] is not None:
                fields[name] = fields[name].isoformat()
        text = jsoncodec.dumps(fields)
        if len(text) <= EVENTS_WIRE_RECORD_BYTES:
            carried[kind] = text.decode()
    return carried


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
    carried = item.get(WRITTEN_KEY)
    written = _records(carried) if isinstance(carried, dict) else None
    try:
        return Change.from_wire(item, written)
    except (KeyError, TypeError, ValueError) as exc:
        logger.warning("skipped an unreadable change event (%s)", type(exc).__name__)
        return None


def _records(carried: dict[Any, Any]) -> dict[str, Any]:
    """The records a change carries, by kind; one this process cannot read (another
    release's columns, a damaged text) is left out, and its frame reads the database."""
    found = {}
    for kind, text in carried.items():
        model = _CARRIED.get(kind)
        if model is None or not isinstance(text, str):
            continue
        try:
            record = _record(model, jsoncodec.loads(text))
        except (TypeError, ValueError) as exc:
            logger.warning("left out an unreadable record of a change (%s)", type(exc).__name__)
            continue
        if record is not None:
            found[kind] = record
    return found


def _record(model: type[SQLModel], values: Any) -> Any:
    """A record of ``model`` (as a read would give it) from its columns' JSON values;
    ``None`` unless every column is there."""
    if not isinstance(values, dict):
        return None
    columns = _columns(model)
    if not all(name in values for name in columns):
        return None
    fields = {name: values[name] for name in columns}
    for name in _times(model):
        value = fields[name]
        if value is not None:
            fields[name] = datetime.fromisoformat(value).astimezone(UTC)
    kind = record_class(model)
    record = kind.__new__(kind)
    record.__dict__ = fields
    return record


@functools.cache
def _columns(model: type[SQLModel]) -> tuple[str, ...]:
    return tuple(column.key for column in table_of(model).columns)


@functools.cache
def _times(model: type[SQLModel]) -> tuple[str, ...]:
    """The columns that read as timezone-aware datetimes (JSON has them as text)."""
    return tuple(
        column.key for column in table_of(model).columns if isinstance(column.type, UTCDateTime)
    )
