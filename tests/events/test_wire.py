"""The wire format of change events between processes: versioned, and readable across the
two releases of a rolling deploy."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from signoff.constants import EVENTS_WIRE_VERSION
from signoff.events import wire
from signoff.events.hub import Change
from tests.events.changes import task_created

SECRET = "hunter2-in-a-snapshot"
AT = datetime(2026, 12, 1, 9, 30, 0, 123456, tzinfo=UTC)


def _change(cursor: int) -> Change:
    return task_created(cursor, occurred_at=AT, snapshot={"note": SECRET}, entity_version=cursor)


def _items(*changes: Change) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(wire.encode(changes))
    return items


def test_every_change_carries_the_wire_version_and_decodes_to_itself() -> None:
    changes = [_change(1), _change(2)]
    assert [item["v"] for item in _items(*changes)] == [EVENTS_WIRE_VERSION] * 2
    assert wire.decode(wire.encode(changes)) == changes


def test_readers_of_the_previous_release_read_the_versioned_format() -> None:
    """The previous release decoded each item with ``Change.from_wire``, which ignores "v"."""
    changes = [_change(1), _change(2)]
    assert [Change.from_wire(item) for item in _items(*changes)] == changes


def test_unknown_fields_are_ignored() -> None:
    item = {**_items(_change(1))[0], "added_later": {"nested": True}, "another": 1}
    assert wire.decode(json.dumps([item])) == [_change(1)]


def test_a_change_without_a_version_is_read_as_version_1() -> None:
    """What the previous release publishes: the same fields, no marker."""
    item = _items(_change(1))[0]
    del item["v"]
    assert wire.decode(json.dumps([item]).encode()) == [_change(1)]


def test_a_newer_version_is_skipped_and_logged_without_its_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    future = {**_items(_change(1))[0], "v": EVENTS_WIRE_VERSION + 1}
    current = _items(_change(2))[0]
    with caplog.at_level(logging.WARNING, logger="signoff.events"):
        decoded = wire.decode(json.dumps([future, current]))
    assert decoded == [_change(2)]
    assert f"wire version {EVENTS_WIRE_VERSION + 1}" in caplog.text
    assert SECRET not in caplog.text


@pytest.mark.parametrize(
    "message",
    [
        "not json at all " + SECRET,
        json.dumps({"v": 2, "changes": [SECRET]}),
        json.dumps([SECRET]),
        json.dumps([{"v": SECRET, "cursor": 1}]),
        json.dumps([{"v": [1], "cursor": 1}]),
        json.dumps([{"v": True, "cursor": 1}]),
        json.dumps([{"v": 1, "cursor": 1, "note": SECRET}]),  # fields missing
        json.dumps([{**{"v": 1}, "occurred_at": "yesterday " + SECRET}]),
    ],
)
def test_unreadable_messages_are_skipped_and_logged_without_their_content(
    message: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="signoff.events"):
        assert wire.decode(message) == []
    assert "skipped" in caplog.text
    assert SECRET not in caplog.text
