"""What a subscription's frames are computed from, with ``after`` left out.

``after`` only says where a subscriber resumes: it changes which events it replays,
never what a frame contains. So it is taken out of the document (as a variable or
written in) before the selection keys a broadcast group: consoles resuming after
different cursors share one group, one execution per event.
"""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import strawberry
from graphql import (
    BREAK,
    DocumentNode,
    FieldNode,
    GraphQLSchema,
    OperationDefinitionNode,
    TypeInfo,
    TypeInfoVisitor,
    VariableNode,
    Visitor,
    print_ast,
    visit,
)

from signoff.constants import LIVE_SELECTION_CACHE_SIZE
from signoff.internals import field_definition, raw_info
from signoff.schema.context import VIEWER_DEPENDENT

# The argument of every subscription field that says where to resume.
RESUME_ARGUMENT = "after"

K = TypeVar("K")
V = TypeVar("V")


class Bounded(Generic[K, V]):
    """A least-recently-used map of at most ``size`` entries."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        value = self._entries.get(key)
        if value is None:
            value = make()
            self._entries[key] = value
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(key)
        return value


@dataclass(frozen=True)
class Selection:
    """One subscription operation without ``after``: what every frame of a group is
    computed from."""

    query: str  # the document as printed, without ``after``
    operation_name: str | None
    variables: str  # canonical JSON of the coerced variables the document still uses


@dataclass(frozen=True)
class _Stripped:
    query: str
    document: DocumentNode
    variable_names: frozenset[str]


class Selections:
    """Turns a subscription's ``info`` into its ``Selection`` and document, and says
    whether the selection reads the viewer; both remembered for a bounded number of
    documents."""

    def __init__(self, schema: GraphQLSchema, size: int = LIVE_SELECTION_CACHE_SIZE) -> None:
        self._schema = schema
        self._stripped: Bounded[tuple[str, str | None], _Stripped] = Bounded(size)
        self._reads_viewer: Bounded[str, bool] = Bounded(size)

    @property
    def cached(self) -> int:
        """Entries remembered, over both caches (for tests of the bound)."""
        return len(self._stripped) + len(self._reads_viewer)

    def of(self, info: strawberry.Info[Any, Any]) -> tuple[Selection, DocumentNode]:
        raw = raw_info(info)
        name = raw.operation.name.value if raw.operation.name is not None else None
        loc = raw.operation.loc
        source = loc.source.body if loc is not None else print_ast(raw.operation)
        stripped = self._stripped.get_or_make(
            (source, name), lambda: _strip(raw.operation, raw.fragments, raw.field_nodes)
        )
        used = {k: v for k, v in info.variable_values.items() if k in stripped.variable_names}
        variables = json.dumps(used, sort_keys=True, default=str)
        return Selection(stripped.query, name, variables), stripped.document

    def reads_viewer(self, selection: Selection, document: DocumentNode) -> bool:
        """Whether the document selects any field marked ``viewer_dependent()``."""
        return self._reads_viewer.get_or_make(
            selection.query, lambda: reads_viewer(self._schema, document)
        )


def _strip(
    operation: OperationDefinitionNode,
    fragments: dict[str, Any],
    root_fields: Collection[FieldNode],
) -> _Stripped:
    """The operation and its fragments with the root field's ``after`` taken out, and the
    variables that are still used (a variable only ``after`` used goes with it)."""
    roots = {id(node) for node in root_fields}

    class TakeOutResume(Visitor):
        def enter_field(self, node: FieldNode, *_: Any) -> Any:
            if id(node) not in roots or not node.arguments:
                return None
            kept = tuple(a for a in node.arguments if a.name.value != RESUME_ARGUMENT)
            return dataclasses.replace(node, arguments=kept)

    definitions = [visit(d, TakeOutResume()) for d in (operation, *fragments.values())]
    used = _variables_used(definitions)
    variable_definitions = definitions[0].variable_definitions or ()
    stripped_operation = dataclasses.replace(
        definitions[0],
        variable_definitions=tuple(
            v for v in variable_definitions if v.variable.name.value in used
        ),
    )
    document = DocumentNode(definitions=(stripped_operation, *definitions[1:]))
    return _Stripped(print_ast(document), document, frozenset(used))


def _variables_used(definitions: list[Any]) -> set[str]:
    used: set[str] = set()

    class Uses(Visitor):
        def enter_variable_definition(self, *_: Any) -> Any:
            return False  # a definition is not a use

        def enter_variable(self, node: VariableNode, *_: Any) -> None:
            used.add(node.name.value)

    for definition in definitions:
        visit(definition, Uses())
    return used


def reads_viewer(schema: GraphQLSchema, document: DocumentNode) -> bool:
    """Whether ``document`` selects any field marked ``viewer_dependent()``."""
    type_info = TypeInfo(schema)
    found = False

    class FindViewerFields(Visitor):
        def enter_field(self, node: FieldNode, *_: Any) -> Any:
            nonlocal found
            field_def = type_info.get_field_def()
            definition = None if field_def is None else field_definition(field_def)
            if definition is not None and definition.metadata.get(VIEWER_DEPENDENT):
                found = True
                return BREAK
            return None

    visit(document, TypeInfoVisitor(type_info, FindViewerFields()))
    return found
