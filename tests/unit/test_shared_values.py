"""The values a group's frames share (``schema.serving.shared_values``): taken only by the
same group, for the same record object and field, from an execution that kept them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from graphql import FieldNode, NameNode
from graphql.pyutils import Path

from signoff.schema.serving.shared_values import SharedValues

FIELD = FieldNode(name=NameNode(value="proposal"))
DATA = {"proposalEvents": {"kind": "proposal.rejected", "proposal": {"id": "p-1"}}}


def info(node: FieldNode = FIELD) -> Any:
    path = Path(Path(None, "proposalEvents", "Subscription"), "proposal", "ChangeEvent")
    return SimpleNamespace(field_nodes=[node], path=path)


def test_a_kept_value_answers_the_same_group_record_and_field_only() -> None:
    shared, group, record = SharedValues(8), object(), object()
    first = shared.for_execution(group)
    assert first.take(record, info()) is None
    first.keep(DATA)
    again = shared.for_execution(group).take(record, info())
    assert again is not None and again.value == {"id": "p-1"}
    assert shared.for_execution(object()).take(record, info()) is None
    assert shared.for_execution(group).take(object(), info()) is None
    other_field = FieldNode(name=NameNode(value="proposal"))
    assert shared.for_execution(group).take(record, info(other_field)) is None


def test_an_execution_that_keeps_nothing_shares_nothing() -> None:
    """A frame executed with errors is not kept (``Frames``): the next one executes."""
    shared, group, record = SharedValues(8), object(), object()
    assert shared.for_execution(group).take(record, info()) is None
    assert shared.for_execution(group).take(record, info()) is None
    assert len(shared) == 0


def test_only_the_newest_are_kept() -> None:
    shared, group = SharedValues(2), object()
    records = [object() for _ in range(3)]
    for record in records:
        execution = shared.for_execution(group)
        execution.take(record, info())
        execution.keep(DATA)
    assert len(shared) == 2
    assert shared.for_execution(group).take(records[0], info()) is None
    assert shared.for_execution(group).take(records[2], info()) is not None
