"""A field's completed value shared by the frames of one write: a decision's events
(``proposal.rejected``, ``task.completed``) carry the same proposal record, read by their
writer, so a group executes that proposal's selection once for both frames.

Keyed by the executing group (one document, variables and visibility), the record itself
(not its id: only events of one transaction share a record) and the field's nodes; kept
only from an execution without errors, and a few at a time for the whole process.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from graphql import GraphQLResolveInfo

# The key of one shared value: the group's, the record's and the field nodes' identities.
_Key = tuple[int, ...]


class Completed:
    """A field's value completed already: the executor answers it as it is."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class SharedValues:
    """The process's shared values, the ``size`` newest; each holds its group and record,
    so neither identity is reused while it is kept."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[_Key, tuple[object, object, Completed]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def for_execution(self, owner: object) -> ExecutionValues:
        """What one execution of ``owner`` (a group's frames) takes and keeps."""
        return ExecutionValues(self, owner)

    def get(self, key: _Key) -> Completed | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[2]

    def keep(self, key: _Key, owner: object, record: object, value: Any) -> None:
        self._entries[key] = (owner, record, Completed(value))
        self._entries.move_to_end(key)
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)


class ExecutionValues:
    """One execution's side of ``SharedValues``: the values it may take, and those it
    computes, noted by path and kept once the execution ends without errors."""

    __slots__ = ("_noted", "_owner", "_shared")

    def __init__(self, shared: SharedValues, owner: object) -> None:
        self._shared = shared
        self._owner = owner
        self._noted: list[tuple[_Key, object, list[str | int]]] = []

    def _key(self, record: object, info: GraphQLResolveInfo[Any]) -> _Key:
        return (id(self._owner), id(record), *[id(node) for node in info.field_nodes])

    def take(self, record: object, info: GraphQLResolveInfo[Any]) -> Completed | None:
        """The value this field completed for ``record`` in an earlier execution, or
        ``None``: then this one's is noted, to be kept (``keep``)."""
        key = self._key(record, info)
        found = self._shared.get(key)
        if found is None:
            self._noted.append((key, record, info.path.as_list()))
        return found

    def keep(self, data: Any) -> None:
        """After an execution without errors whose result is ``data``: keep what it
        completed for the fields noted."""
        for key, record, path in self._noted:
            value = data
            for step in path:
                value = value[step]
            self._shared.keep(key, self._owner, record, value)
        self._noted.clear()
