"""What a query selects below a field, read before the field's value is resolved, so that a
list loads its items' nested objects in one go (``loaders.warm``).

Fields merge by name across aliases, fragments and ``@skip``/``@include``: looking ahead
may load what the query skips, never miss what it selects. Unlike Strawberry's
``info.selected_fields``, it visits each fragment once, not once per spread; and as it reads
nothing but the document (a parsed document is cached: ``CachedParse``), what it finds for
a field's nodes is kept and found again by their identity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import strawberry
from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    SelectionNode,
)

from signoff.internals import raw_info


class Selected:
    """The fields selected below a field, by name, each with what is selected below it."""

    __slots__ = ("_fields",)

    def __init__(self, fields: dict[str, Selected] | None = None) -> None:
        self._fields: dict[str, Selected] = fields or {}

    def __contains__(self, name: str) -> bool:
        return name in self._fields

    def __getitem__(self, name: str) -> Selected:
        return self._fields.get(name, NOTHING)

    def __or__(self, other: Selected) -> Selected:
        merged = Selected(dict(self._fields))
        merged._merge(other)
        return merged

    def __bool__(self) -> bool:
        return bool(self._fields)

    def names(self) -> frozenset[str]:
        return frozenset(self._fields)

    def _merge(self, other: Selected) -> None:
        for name, below in other._fields.items():
            mine = self._fields.get(name)
            if mine is None:
                self._fields[name] = below
            elif mine is not below:
                self._fields[name] = mine | below


NOTHING = Selected()


# What ``selected`` found, by depth and the identities of the field's nodes; each entry keeps
# its nodes (and so their document) alive, so that their ids name them and no others.
_FOUND: dict[tuple[int, ...], tuple[list[FieldNode], Selected]] = {}
KEPT_SELECTIONS = 512


def selected(info: strawberry.Info[Any, Any], depth: int) -> Selected:
    """The fields selected below the field being resolved, ``depth`` levels deep (never
    changed once found: merging makes a new ``Selected``)."""
    # Strawberry's Info wraps graphql-core's; the field nodes and fragments are on it.
    raw = raw_info(info)
    nodes = raw.field_nodes
    key = (depth, *map(id, nodes))
    kept = _FOUND.get(key)
    if kept is not None:
        return kept[1]
    walk = _Walk(raw.fragments, depth)
    found = walk.fields(
        (node.selection_set.selections for node in nodes if node.selection_set), depth
    )
    if len(_FOUND) >= KEPT_SELECTIONS:
        _FOUND.pop(next(iter(_FOUND)))
    _FOUND[key] = (list(nodes), found)
    return found


class _Walk:
    def __init__(self, fragments: Mapping[str, FragmentDefinitionNode], depth: int) -> None:
        self._fragments = fragments
        # A fragment's fields at a given depth, so that each fragment is walked once.
        self._seen: dict[tuple[str, int], Selected] = {}

    def fields(self, groups: Iterable[Iterable[SelectionNode]], depth: int) -> Selected:
        found = Selected()
        for selections in groups:
            for node in selections:
                found._merge(self._node(node, depth))
        return found

    def _node(self, node: SelectionNode, depth: int) -> Selected:
        if isinstance(node, FieldNode):
            below = NOTHING
            if depth > 1 and node.selection_set is not None:
                below = self.fields([node.selection_set.selections], depth - 1)
            return Selected({node.name.value: below})
        if isinstance(node, InlineFragmentNode):
            return self.fields([node.selection_set.selections], depth)
        if isinstance(node, FragmentSpreadNode):
            return self._fragment(node.name.value, depth)
        return NOTHING

    def _fragment(self, name: str, depth: int) -> Selected:
        key = (name, depth)
        if key not in self._seen:
            # Validation refused cycles; mark it anyway so that a cycle ends here.
            self._seen[key] = NOTHING
            fragment = self._fragments.get(name)
            if fragment is not None:
                self._seen[key] = self.fields([fragment.selection_set.selections], depth)
        return self._seen[key]
