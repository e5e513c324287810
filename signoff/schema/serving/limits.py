"""Query limits checked before execution: depth, aliases and cost, in time linear in the document.

Each fragment is measured once, after the fragments it spreads, and a spread adds the sizes
measured (Strawberry's ``QueryDepthLimiter`` walks a fragment again at every spread). Sizes
may be huge numbers, which Python's integers hold and the limits refuse. Introspection
fields count one each, so schema tools keep working (docs/design.md section 9, Limits).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
    get_nullable_type,
    is_list_type,
)
from graphql.type.definition import GraphQLInterfaceType

from signoff.constants import (
    PAGE_SIZE_DEFAULT,
    PAGE_SIZE_MAX,
    QUERY_LIST_SIZE_ESTIMATE,
    QUERY_MAX_ALIASES,
    QUERY_MAX_COST,
    QUERY_MAX_DEPTH,
    QUERY_MAX_MERGED,
)
from signoff.errors import QueryTooCostly, QueryTooDeep, SignoffError, TooManyAliases

# Below this many levels a selection set is not measured further: the query is refused
# for its depth anyway, and the walk's recursion stays bounded.
_CUTOFF = QUERY_MAX_DEPTH + 1


@dataclass(frozen=True)
class Size:
    """What a selection set costs: nesting depth, aliases and fields times list sizes."""

    depth: int = 0
    aliases: int = 0
    cost: int = 0
    # The most selections merged into one place: of one response name, or of fragments.
    merged: int = 0

    def __add__(self, other: Size) -> Size:
        return Size(
            max(self.depth, other.depth),
            self.aliases + other.aliases,
            self.cost + other.cost,
            max(self.merged, other.merged),
        )


@dataclass(frozen=True)
class Merged:
    """What one selection set merges: response names with their counts, and the fragments
    spread into it (through other fragments and inline fragments too)."""

    names: Counter[str]
    spreads: frozenset[str]

    @property
    def widest(self) -> int:
        return max(max(self.names.values(), default=0), len(self.spreads))


@dataclass(frozen=True)
class Limits:
    depth: int = QUERY_MAX_DEPTH
    aliases: int = QUERY_MAX_ALIASES
    cost: int = QUERY_MAX_COST
    merged: int = QUERY_MAX_MERGED

    def refusal(self, size: Size) -> SignoffError | None:
        """The first limit ``size`` breaks, as the refusal a client sees."""
        if size.depth > self.depth:
            return QueryTooDeep(
                f"The query nests fields deeper than the limit of {self.depth} levels; "
                "ask for less at once and follow ids in another query."
            )
        if size.aliases > self.aliases:
            return TooManyAliases(
                f"The query uses {size.aliases} aliases (counting each fragment spread); "
                f"the limit is {self.aliases}."
            )
        if size.cost > self.cost:
            return QueryTooCostly(
                f"The query's cost is {_rounded(size.cost)}; the limit is {self.cost}. "
                "Cost counts each field once per item of every list above it (`first`, "
                f"else {PAGE_SIZE_DEFAULT}, for connections; {QUERY_LIST_SIZE_ESTIMATE} for "
                "plain lists): ask for smaller pages or fewer fields."
            )
        if size.merged > self.merged:
            return QueryTooCostly(
                f"The query merges {_rounded(size.merged)} selections of one field, or "
                f"fragments, into one place; the limit is {self.merged} (comparing them "
                "costs the square of their number). Select each field once."
            )
        return None


def _rounded(cost: int) -> str:
    return str(cost) if cost < 10**12 else f"over 10^{len(str(cost)) - 1}"


class Measure:
    """Sizes of an executable document's selection sets, each fragment measured once."""

    def __init__(self, schema: GraphQLSchema, document: DocumentNode) -> None:
        self.schema = schema
        self.fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        self.sizes: dict[str, Size] = {}
        self.merges: dict[str, Merged] = {}
        for name in _dependency_order(self.fragments):
            fragment = self.fragments[name]
            parent = schema.get_type(fragment.type_condition.name.value)
            self.merges[name] = self.merged(fragment.selection_set)
            self.sizes[name] = self.selection_set(fragment.selection_set, parent, 0)

    def operation(self, operation: OperationDefinitionNode) -> Size:
        root = self.schema.get_root_type(operation.operation)
        return self.selection_set(operation.selection_set, root, 0)

    def selection_set(
        self, selection_set: SelectionSetNode, parent: GraphQLNamedType | None, level: int
    ) -> Size:
        total = Size()
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                total += self.field(selection, parent, level)
            elif isinstance(selection, FragmentSpreadNode):
                # Unknown or cyclic fragments are refused by graphql-core's own rules.
                total += self.sizes.get(selection.name.value, Size())
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                inner = parent if condition is None else self.schema.get_type(condition.name.value)
                total += self.selection_set(selection.selection_set, inner, level)
        return total + Size(merged=self.merged(selection_set).widest)

    def merged(self, selection_set: SelectionSetNode) -> Merged:
        """The fields and fragments graphql-core merges (and compares pairwise) at one place."""
        names: Counter[str] = Counter()
        spreads: set[str] = set()
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                names[(selection.alias or selection.name).value] += 1
                continue
            if isinstance(selection, FragmentSpreadNode):
                spreads.add(selection.name.value)
                inner = self.merges.get(selection.name.value)
            else:
                assert isinstance(selection, InlineFragmentNode)
                inner = self.merged(selection.selection_set)
            if inner is not None:
                names.update(inner.names)
                spreads.update(inner.spreads)
        return Merged(names, frozenset(spreads))

    def field(self, node: FieldNode, parent: GraphQLNamedType | None, level: int) -> Size:
        alias = 1 if node.alias is not None else 0
        if node.selection_set is None or node.name.value.startswith("__"):
            return Size(0, alias, 1)
        if level >= _CUTOFF:
            return Size(1, alias, 1)
        field_type, has_first = _field_type(parent, node.name.value)
        children = self.selection_set(node.selection_set, get_named_type(field_type), level + 1)
        times = _list_size(node, parent, field_type, has_first)
        return Size(
            1 + children.depth,
            alias + times * children.aliases,
            1 + times * children.cost,
            children.merged,
        )


def _field_type(parent: GraphQLNamedType | None, name: str) -> tuple[Any, bool]:
    """The field's GraphQL type (``None`` if unknown) and whether it takes ``first``."""
    if not isinstance(parent, GraphQLObjectType | GraphQLInterfaceType):
        return None, False
    definition = parent.fields.get(name)
    if definition is None:
        return None, False
    return definition.type, "first" in definition.args


def _list_size(
    node: FieldNode, parent: GraphQLNamedType | None, field_type: Any, has_first: bool
) -> int:
    """How many items the field's selection is executed for, at most or as estimated."""
    if has_first:
        return _first(node)
    if field_type is None or not is_list_type(get_nullable_type(field_type)):
        return 1
    if parent is not None and parent.name.endswith("Connection"):
        return 1  # a connection's edges or nodes: its `first` already counted them
    return QUERY_LIST_SIZE_ESTIMATE


def _first(node: FieldNode) -> int:
    for argument in node.arguments or ():
        if argument.name.value == "first":
            value = argument.value
            if isinstance(value, IntValueNode) and len(value.value) <= 6:
                return max(1, min(int(value.value), PAGE_SIZE_MAX))
            return PAGE_SIZE_MAX  # a variable: its value is not known while validating
    return PAGE_SIZE_DEFAULT


def _spreads(fragment: FragmentDefinitionNode) -> set[str]:
    """The names of the fragments spread anywhere inside ``fragment`` (walked without recursion)."""
    names: set[str] = set()
    stack = [fragment.selection_set]
    while stack:
        for selection in stack.pop().selections:
            if isinstance(selection, FragmentSpreadNode):
                names.add(selection.name.value)
            else:
                inner: SelectionSetNode | None = getattr(selection, "selection_set", None)
                if inner is not None:
                    stack.append(inner)
    return names


def _dependency_order(fragments: dict[str, FragmentDefinitionNode]) -> list[str]:
    """Fragment names, each after the fragments it spreads (cycles broken arbitrarily)."""
    spreads = {name: _spreads(fragment) & fragments.keys() for name, fragment in fragments.items()}
    order: list[str] = []
    seen: set[str] = set()
    for start in fragments:
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(sorted(spreads[start])))]
        while stack:
            name, pending = stack[-1]
            following = next((n for n in pending if n not in seen), None)
            if following is None:
                stack.pop()
                order.append(name)
            else:
                seen.add(following)
                stack.append((following, iter(sorted(spreads[following]))))
    return order


def limits_refusal(
    schema: GraphQLSchema, document: DocumentNode, limits: Limits = Limits()
) -> GraphQLError | None:
    """The error for the first operation of ``document`` that breaks a limit, if any.

    A direct walk of the document, without graphql-core's visitor (which costs more than
    the measuring): it runs before validation, on every document that parsed.
    """
    measure = Measure(schema, document)
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            refusal = limits.refusal(measure.operation(definition))
            if refusal is not None:
                return GraphQLError(refusal.message, [definition], extensions=refusal.extensions)
    return None
