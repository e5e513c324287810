"""graphql-core's executor, with short paths for the fields that make most of a response.

Planned once per schema (``plan_plain_fields``): a plain leaf field is answered with its
attribute, or the value of a resolver that takes nothing but its object, and its type's
coercion, falling back to graphql-core's completion for anything unusual; a relation
without arguments (an object's attribute, or its resolver's value) is completed in place
(``relations``). Sub-field collections are shared across executions
(docs/design.md section 12, Execution).
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import strawberry
from graphql import (
    ExecutableDefinitionNode,
    GraphQLEnumType,
    GraphQLField,
    GraphQLLeafType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    GraphQLScalarType,
    OperationDefinitionNode,
    get_nullable_type,
)
from graphql.execution.executor import to_nodes
from graphql.pyutils import AwaitableOrValue, Path, Undefined, gather_with_cancel
from graphql.type.scalars import (
    GRAPHQL_MAX_INT,
    GRAPHQL_MIN_INT,
    serialize_boolean,
    serialize_id,
    serialize_int,
    serialize_string,
)

from signoff.internals import (
    CollectedFields,
    FieldDetailsList,
    FragmentDetails,
    GroupedFieldSet,
    StrawberryExecutionContext,
    collect_subfields,
    core_schema,
    detached_async_helpers,
    field_definition,
    has_default_resolver,
    json_serialize,
    make_info,
)
from signoff.schema.loaders import loaded_relation
from signoff.schema.serving.relations import SYNC, RelationStep, execute_relation, relation_of
from signoff.schema.serving.shared_values import Completed

PLAIN = "signoff.plain-field"
RELATION = "signoff.relation"


@dataclass(frozen=True, slots=True)
class PlainField:
    """How to answer one plain leaf field: what reads its value off its object (the
    attribute, or the field's resolver), and its type's coercion."""

    read: Callable[[Any], Any]
    nullable: bool
    coerce: Callable[[Any], Any]
    # The types of values the coercion answers unchanged (a str for String and ID).
    unchanged: frozenset[type] = frozenset()
    # Read by the field's resolver: a failure or an unusual value is completed from the
    # value read (``complete_resolved``), as the resolver is not called twice.
    resolved: bool = False


def plan_plain_fields(schema: strawberry.Schema) -> None:
    """Mark every plain leaf field of ``schema``'s object types with its ``PlainField``, and
    every basic field of an object type (or list of one) with its ``Relation``; give every
    field whose resolver takes no argument a direct call of that resolver, and mark those
    among them that are leaves of a resolver taking only its object, or relations."""
    graphql_schema = core_schema(schema)
    for named in graphql_schema.type_map.values():
        if not isinstance(named, GraphQLObjectType) or named.name.startswith("__"):
            continue
        for field in named.fields.values():
            plan = _plain_field(field)
            if plan is not None:
                field.extensions[PLAIN] = plan
            elif _basic(field):
                # An exception handler would see a failed read in Strawberry's resolver.
                relation = (
                    None
                    if schema.exception_handlers
                    else relation_of(field, _attribute_answer(field))
                )
                if relation is not None:
                    field.extensions[RELATION] = relation
            elif named is not graphql_schema.subscription_type and not schema.exception_handlers:
                direct = _direct_call(field, schema.config.info_class)
                if direct is not None:
                    field.resolve = direct
                    _plan_resolved(field)


def _plan_resolved(field: GraphQLField) -> None:
    """Mark a field resolved by its direct call: a leaf whose resolver takes only its
    object as a ``PlainField``, an object or list of objects as a ``Relation``."""
    read = _self_only_resolver(field)
    leaf = get_nullable_type(field.type)
    if read is not None and isinstance(leaf, GraphQLScalarType | GraphQLEnumType):
        field.extensions[PLAIN] = _leaf_plan(field, read, resolved=True)
        return
    relation = relation_of(field, _loaded_answer(field))
    if relation is not None:
        field.extensions[RELATION] = relation


def _basic(field: GraphQLField) -> bool:
    """Whether Strawberry answers ``field`` with ``getattr(source, python_name)``: its
    basic resolver, with no resolver, permission or extension of its own."""
    definition = field_definition(field)
    return (
        definition is not None
        and not definition.extensions
        and has_default_resolver(field)
        and definition.default_resolver is getattr
    )


def _attribute_answer(field: GraphQLField) -> Callable[[Any, Any], Any]:
    """A basic field's answer from its object (and the context, unused)."""
    definition = field_definition(field)
    assert definition is not None
    read = operator.attrgetter(definition.python_name)

    def answer(source: Any, _context: Any) -> Any:
        return read(source)

    return answer


def _self_only_resolver(field: GraphQLField) -> Callable[[Any], Any] | None:
    """The function behind a field's resolver that takes nothing but its object (``self``),
    and is not a coroutine function: called with the object, it answers the field."""
    definition = field_definition(field)
    resolver = None if definition is None else definition.base_resolver
    if resolver is None or definition is None or definition.extensions or field.args:
        return None
    function = resolver.wrapped_func
    if (
        resolver.self_parameter is None
        or resolver.arguments
        or resolver.info_parameter is not None
        or resolver.parent_parameter is not None
        or resolver.root_parameter is not None
        or resolver.is_async
        or not callable(function)
        or len(inspect.signature(function).parameters) != 1
    ):
        return None
    read: Callable[[Any], Any] = function
    return read


def _direct_call(
    field: GraphQLField, info_class: type[strawberry.Info]
) -> Callable[[Any, GraphQLResolveInfo[Any]], Any] | None:
    """A resolver with no GraphQL argument, called as Strawberry calls it, without the
    wrapper that converts arguments and chains field extensions (there are none)."""
    definition = field_definition(field)
    if definition is None or definition.extensions or field.args:
        return None
    resolver = definition.base_resolver
    if resolver is None or resolver.arguments or not callable(resolver.wrapped_func):
        return None
    function: Callable[..., Any] = resolver.wrapped_func
    passes_self = resolver.self_parameter is not None
    source_names = [p.name for p in (resolver.parent_parameter, resolver.root_parameter) if p]
    info_name = resolver.info_parameter.name if resolver.info_parameter else None
    if passes_self and not source_names and info_name and _second_parameter(function) == info_name:

        def resolve_with_info(source: Any, info: GraphQLResolveInfo[Any]) -> Any:
            return function(source, make_info(info_class, info, definition))

        return resolve_with_info

    def resolve(source: Any, info: GraphQLResolveInfo[Any]) -> Any:
        kwargs = dict.fromkeys(source_names, source)
        if info_name is not None:
            kwargs[info_name] = make_info(info_class, info, definition)
        return function(source, **kwargs) if passes_self else function(**kwargs)

    return resolve


def _loaded_answer(field: GraphQLField) -> Callable[[Any, Any], Any] | None:
    """What answers a field ``loaded_field`` made, from its source and the context."""
    definition = field_definition(field)
    resolver = None if definition is None else definition.base_resolver
    relation = None if resolver is None else loaded_relation(resolver.wrapped_func)
    return None if relation is None else relation.answer


def _second_parameter(function: Callable[..., Any]) -> str | None:
    """The name of the second parameter (after ``self``) where it may be passed by position,
    and is the last one."""
    parameters = list(inspect.signature(function).parameters.values())
    if len(parameters) != 2 or parameters[1].kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
        return None
    return parameters[1].name


def _plain_field(field: GraphQLField) -> PlainField | None:
    definition = field_definition(field)
    # Strawberry's resolver for a field without resolver, permission or extension (and no
    # exception handler): it returns ``default_resolver(source, python_name)``.
    if definition is None or not _basic(field):
        return None
    if not isinstance(get_nullable_type(field.type), GraphQLScalarType | GraphQLEnumType):
        return None
    return _leaf_plan(field, operator.attrgetter(definition.python_name), resolved=False)


def _leaf_plan(field: GraphQLField, read: Callable[[Any], Any], *, resolved: bool) -> PlainField:
    leaf = get_nullable_type(field.type)
    assert isinstance(leaf, GraphQLScalarType | GraphQLEnumType)
    nullable = not isinstance(field.type, GraphQLNonNull)
    unchanged = _UNCHANGED.get(leaf.coerce_output_value, frozenset())
    return PlainField(read, nullable, _coercion(leaf), unchanged, resolved)


# Coercions that answer values of these exact types as they are: graphql-core's String and
# ID return a str, and Boolean a bool, unchanged; Strawberry's JSON returns any value.
_UNCHANGED: dict[Callable[[Any], Any], frozenset[type]] = {
    serialize_string: frozenset({str}),
    serialize_id: frozenset({str}),
    serialize_boolean: frozenset({bool}),
    json_serialize: frozenset({dict, list, str, int, float, bool}),
}


def _coercion(leaf: GraphQLLeafType) -> Callable[[Any], Any]:
    """The type's output coercion; for an enum of Python members, a dict of their names.

    Strawberry's enum coercion compares a member with each value of its enum in turn;
    the dict answers the same name, and anything it does not hold goes to that
    comparison.
    """
    coerce = leaf.coerce_output_value
    if coerce is serialize_int:
        return _coerce_int
    wrapped = getattr(leaf, "wrapped_cls", None)
    if not isinstance(leaf, GraphQLEnumType) or not (
        isinstance(wrapped, type) and issubclass(wrapped, Enum)
    ):
        return coerce
    names = {member: coerce(member) for member in wrapped}

    def coerce_member(value: Any) -> Any:
        name = names.get(value) if type(value) is wrapped else None
        return coerce(value) if name is None else name

    return coerce_member


def _coerce_int(value: Any) -> int:
    """graphql-core's Int coercion, which answers an int of 32 bits (the usual value) as it is,
    in one call rather than two."""
    if type(value) is int and GRAPHQL_MIN_INT <= value <= GRAPHQL_MAX_INT:
        return value
    return serialize_int(value)


class PlainFieldExecutor(StrawberryExecutionContext):
    """Strawberry's executor, answering plain leaf fields in place (module docstring).

    ``execute_fields`` is graphql-core's, with the plain fields answered in its loop: such
    a field needs neither its ``Path`` nor a call of ``execute_field``, unless it fails.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # No reference cycle: a request's objects go when it ends, not at the next
        # collection of the cyclic garbage collector (``detached_async_helpers``).
        self.async_helpers = detached_async_helpers(self)
        # A field middleware (an extension's ``resolve`` hook) must see every field.
        manager = self.middleware_manager
        self.plain_fields_in_place = manager is None or not manager.middlewares
        # Nothing here grows with executions: a subscription renders every event with a
        # shallow copy of one executor (``build_per_event_executor``).
        self._shared = shared_collections(self.operation, self.fragments)
        # Without directives there is no @defer or @stream to complete a value around.
        self.relations_in_place = self.plain_fields_in_place and self._shared is not None

    def collect_subfields(
        self, return_type: GraphQLObjectType, field_details_list: FieldDetailsList
    ) -> CollectedFields:
        """graphql-core's collection of sub-fields, shared by every execution of an
        operation that has no directive (``shared_collections``)."""
        shared = self._shared
        if shared is None:
            return super().collect_subfields(return_type, field_details_list)
        key = (return_type, *[id(details.node) for details in field_details_list])
        collected = shared.collected.get(key)
        if collected is None:
            collected = shared.collected[key] = collect_subfields(
                self.schema,
                self.fragments,
                self.variable_values,
                self.operation,
                return_type,
                field_details_list,
                self.hide_suggestions,
            )
            fields = collected.grouped_field_set
            shared.steps[id(fields)] = _steps_of(return_type, fields)
        return collected

    def execute_fields(
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Path | None,
        grouped_field_set: GroupedFieldSet,
        position_context: Any,
    ) -> AwaitableOrValue[dict[str, Any]]:
        if not self.plain_fields_in_place:
            return super().execute_fields(
                parent_type, source_value, path, grouped_field_set, position_context
            )
        results: dict[str, Any] = {}
        is_awaitable = self.is_awaitable
        awaitable_fields: list[str] = []
        try:
            steps = None if self._shared is None else self._shared.steps.get(id(grouped_field_set))
            for response_name, field_details_list, plain, relation in steps or _steps_of(
                parent_type, grouped_field_set
            ):
                if relation is not None:
                    if self.relations_in_place and position_context is None:
                        result = execute_relation(
                            self,
                            relation,
                            parent_type,
                            source_value,
                            field_details_list,
                            Path(path, response_name, parent_type.name),
                        )
                        results[response_name] = result
                        if type(result) not in SYNC and is_awaitable(result):
                            awaitable_fields.append(response_name)
                        continue
                elif plain is not None:
                    value: Any = _UNREAD
                    try:
                        value = plain.read(source_value)
                        if type(value) in plain.unchanged:
                            results[response_name] = value
                            continue
                        if value is None:
                            if plain.nullable:
                                results[response_name] = None
                                continue
                        else:
                            coerced = plain.coerce(value)
                            if coerced is not None and coerced is not Undefined:
                                results[response_name] = coerced
                                continue
                    except Exception as error:
                        # An attribute is read again by execute_field, which reports it; a
                        # resolver is not called again (``complete_resolved``).
                        if value is _UNREAD:
                            value = _Failed(error)
                    if plain.resolved:
                        result = self.complete_resolved(
                            parent_type,
                            field_details_list,
                            Path(path, response_name, parent_type.name),
                            position_context,
                            value,
                        )
                        results[response_name] = result
                        if is_awaitable(result):
                            awaitable_fields.append(response_name)
                        continue
                result = self.execute_field(
                    parent_type,
                    source_value,
                    field_details_list,
                    Path(path, response_name, parent_type.name),
                    position_context,
                )
                if result is not Undefined:
                    results[response_name] = result
                    if is_awaitable(result):
                        awaitable_fields.append(response_name)
        except Exception:
            if awaitable_fields:
                self.settle_in_background([results[name] for name in awaitable_fields])
            raise
        if not awaitable_fields:
            return results
        return _gathered(results, awaitable_fields)

    def complete_value(
        self,
        return_type: GraphQLOutputType,
        field_details_list: FieldDetailsList,
        info: GraphQLResolveInfo[Any],
        path: Path,
        result: Any,
        position_context: Any,
    ) -> AwaitableOrValue[Any]:
        """graphql-core's, but for a value completed in an earlier execution of the same
        selection (``shared_values``), answered as it is."""
        if type(result) is Completed:
            return result.value
        return super().complete_value(
            return_type, field_details_list, info, path, result, position_context
        )

    def complete_resolved(
        self,
        parent_type: GraphQLObjectType,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
        value: Any,
    ) -> AwaitableOrValue[Any]:
        """``execute_field`` after its resolver's call, for a leaf whose resolver was called
        already (``value``, or ``_Failed`` with what it raised)."""
        field = parent_type.fields[field_details_list[0].node.name.value]
        return_type = field.type
        info = self.build_resolve_info(field, to_nodes(field_details_list), parent_type, path)
        try:
            if isinstance(value, _Failed):
                raise value.error
            if self.is_awaitable(value):
                return self.complete_awaitable_value(
                    return_type, field_details_list, info, path, value, position_context
                )
            # A leaf's completion is never awaitable.
            return self.complete_value(
                return_type, field_details_list, info, path, value, position_context
            )
        except Exception as raw_error:
            self.handle_field_error(raw_error, return_type, field_details_list, path)
            return None


class _Failed:
    """What a leaf's resolver raised, to be reported where graphql-core reports it."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


# A plain field's value before it is read.
_UNREAD: Any = object()

# A field's response name and details, with its ``PlainField`` or its ``RelationStep`` (at
# most one of them), each in a place of its own so that the loop tells them apart without
# a type check per field.
_Step = tuple[str, FieldDetailsList, PlainField | None, RelationStep | None]


def _steps_of(parent_type: GraphQLObjectType, grouped_field_set: GroupedFieldSet) -> list[_Step]:
    """The fields of ``grouped_field_set``, each with its ``PlainField`` or ``RelationStep``
    if it is one."""
    steps: list[_Step] = []
    for response_name, field_details_list in grouped_field_set.items():
        node = field_details_list[0].node
        field = parent_type.fields.get(node.name.value)
        plain: PlainField | None = None
        step: RelationStep | None = None
        if field is not None:
            plain = field.extensions.get(PLAIN)
            relation = field.extensions.get(RELATION)
            if plain is None and relation is not None and not node.arguments:
                step = RelationStep(relation, field_details_list)
        steps.append((response_name, field_details_list, plain, step))
    return steps


class SharedCollections:
    """An operation's sub-field collections, and each collected field set's steps by the
    set's identity (each set lives as long as this, so its id names it alone)."""

    __slots__ = ("collected", "steps")

    def __init__(self) -> None:
        self.collected: dict[tuple[Any, ...], CollectedFields] = {}
        self.steps: dict[int, list[_Step]] = {}


# Sub-field collections of operations without directives, by the operation's identity.
# Each entry keeps its operation and fragments alive, so that the ids of their nodes in
# its keys name those nodes and no others.
_SHARED: dict[
    int, tuple[OperationDefinitionNode, list[FragmentDetails], SharedCollections | None]
] = {}
SHARED_OPERATIONS = 512


def shared_collections(
    operation: OperationDefinitionNode, fragments: dict[str, FragmentDetails]
) -> SharedCollections | None:
    """Where an operation's sub-field collections are kept across executions, or None where a
    collection may differ between them. What graphql-core collects depends on the variables
    only through ``@skip``, ``@include`` and ``@defer``: without them, and with parsing cached
    (``CachedParse``), every execution collects the same fields of the same nodes."""
    entry = _SHARED.get(id(operation))
    if entry is None:
        if len(_SHARED) >= SHARED_OPERATIONS:
            _SHARED.pop(next(iter(_SHARED)))
        kept = list(fragments.values())
        definitions = [operation, *(details.definition for details in kept)]
        static = not any(_has_directive(definition) for definition in definitions)
        entry = _SHARED[id(operation)] = (operation, kept, SharedCollections() if static else None)
    return entry[2]


def _has_directive(definition: ExecutableDefinitionNode) -> bool:
    if definition.directives:
        return True
    pending = [definition.selection_set]
    while pending:
        for selection in pending.pop().selections:
            if selection.directives:
                return True
            selection_set = getattr(selection, "selection_set", None)
            if selection_set is not None:
                pending.append(selection_set)
    return False


async def _gathered(results: dict[str, Any], awaitable_fields: list[str]) -> dict[str, Any]:
    """``results`` with its awaitable fields' values, awaited together (as graphql-core)."""
    if len(awaitable_fields) == 1:
        name = awaitable_fields[0]
        results[name] = await results[name]
    else:
        values = await gather_with_cancel(*(results[name] for name in awaitable_fields))
        results.update(zip(awaitable_fields, values, strict=True))
    return results
