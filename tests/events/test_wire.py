"""The wire format of change events between processes: versioned, and readable across the
two releases of a rolling deploy."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from signoff.constants import EVENTS_WIRE_RECORD_BYTES, EVENTS_WIRE_VERSION
from signoff.events import wire
from signoff.events.hub import Change
from signoff.models import HumanTask
from signoff.models.records import as_records, table_of
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


def _task_record(**fields: Any) -> Any:
    """A record of a task, as a writer reads it back in its transaction."""
    task = HumanTask(
        id="t1",
        queue_id="q",
        kind="REVIEW",
        title="Check the invoice",
        context={"amount": 12, "note": SECRET},
        due_at=AT,
        created_by_id="a1",
        created_at=AT,
        updated_at=AT,
    )
    columns = {column.key: getattr(task, column.key) for column in table_of(HumanTask).columns}
    return as_records(HumanTask, [columns | fields])[0]


def test_a_change_carries_its_writers_records_to_other_processes() -> None:
    """A reader's frame shows what the writer's shows, without reading the database; the
    relations (read for agents of the writer's process) stay in that process."""
    record = _task_record(claim_expires_at=None, response={"big": 2**70})
    change = replace(_change(1), written={"task": record, "relations": object()})
    [decoded] = wire.decode(wire.encode([change]))
    assert decoded == change
    assert set(decoded.written) == {"task"}
    carried = decoded.written["task"]
    for column in table_of(HumanTask).columns:
        assert getattr(carried, column.key) == getattr(record, column.key), column.key
    assert carried.due_at.tzinfo is not None
    assert carried.claim_expires_at is None


def test_a_change_without_records_carries_none() -> None:
    assert "written" not in _items(_change(1))[0]
    assert wire.decode(wire.encode([_change(1)]))[0].written == {}


def test_a_record_larger_than_the_bound_is_left_to_the_readers_database() -> None:
    large = _task_record(context={"text": "x" * EVENTS_WIRE_RECORD_BYTES})
    change = replace(_change(1), written={"task": large})
    assert "written" not in _items(change)[0]
    assert wire.decode(wire.encode([change]))[0].written == {}


@pytest.mark.parametrize(
    "carried",
    [
        {"task": json.dumps({"id": "t1"})},  # columns missing: another release's record
        {"task": "not json " + SECRET},
        {"task": {"id": "t1"}},
        {"incident": json.dumps({"id": "i1"})},  # a kind this release does not carry
    ],
)
def test_a_record_this_process_cannot_read_is_left_out(
    carried: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Only the record: its change is delivered, and its frame reads the database."""
    item = {**_items(_change(1))[0], "written": carried}
    with caplog.at_level(logging.WARNING, logger="signoff.events"):
        [decoded] = wire.decode(json.dumps([item]))
    assert decoded == _change(1)
    assert decoded.written == {}
    assert SECRET not in caplog.text


def test_a_record_with_an_unreadable_time_is_left_out(caplog: pytest.LogCaptureFixture) -> None:
    [item] = _items(replace(_change(1), written={"task": _task_record()}))
    fields = json.loads(item["written"]["task"]) | {"due_at": "yesterday " + SECRET}
    item["written"] = {"task": json.dumps(fields)}
    with caplog.at_level(logging.WARNING, logger="signoff.events"):
        [decoded] = wire.decode(json.dumps([item]))
    assert decoded.written == {}
    assert "unreadable record" in caplog.text
    assert SECRET not in caplog.text
