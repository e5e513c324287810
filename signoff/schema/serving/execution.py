"""graphql-core's executor, with short paths for the fields that make most of a response.

Planned once per schema (``plan_plain_fields``): a plain leaf field is answered with its
attribute and its type's coercion, falling back to graphql-core's ``execute_field`` for
anything unusual; a relation without arguments calls its resolver directly, and its value
is completed in place (``relations``). Sub-field collections are shared across executions
(docs/design.md section 12, Execution).
"""

from __future__ import annotations

import inspect
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
    GraphQLResolveInfo,
    GraphQLScalarType,
    OperationDefinitionNode,
    get_nullable_type,
)
from graphql.pyutils import AwaitableOrValue, Path, Undefined, gather_with_cancel
from graphql.type.scalars import serialize_boolean, serialize_id, serialize_string

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
from signoff.schema.serving.relations import RelationStep, execute_relation, relation_of

PLAIN = "signoff.plain-field"
RELATION = "signoff.relation"


@dataclass(frozen=True, slots=True)
class PlainField:
    """How to answer one plain leaf field: the attribute, and its type's coercion."""

    attribute: str
    nullable: bool
    coerce: Callable[[Any], Any]
    # The types of values the coercion answers unchanged (a str for String and ID).
    unchanged: frozenset[type] = frozenset()


def plan_plain_fields(schema: strawberry.Schema) -> None:
    """Mark every plain leaf field of ``schema``'s object types with its ``PlainField``, give
    every field whose resolver takes no argument a direct call of that resolver, and mark
    the relations among those fields with their ``Relation``."""
    graphql_schema = core_schema(schema)
    for named in graphql_schema.type_map.values():
        if not isinstance(named, GraphQLObjectType) or named.name.startswith("__"):
            continue
        for field in named.fields.values():
            plan = _plain_field(field)
            if plan is not None:
                field.extensions[PLAIN] = plan
            elif named is not graphql_schema.subscription_type and not schema.exception_handlers:
                direct = _direct_call(field, schema.config.info_class)
                if direct is not None:
                    field.resolve = direct
                    relation = relation_of(field, _loaded_answer(field))
                    if relation is not None:
                        field.extensions[RELATION] = relation


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
    if definition is None:
        return None
    # Strawberry's resolver for a field without resolver, permission or extension (and no
    # exception handler): it returns ``default_resolver(source, python_name)``.
    if not has_default_resolver(field) or definition.default_resolver is not getattr:
        return None
    nullable = not isinstance(field.type, GraphQLNonNull)
    leaf = get_nullable_type(field.type)
    if not isinstance(leaf, GraphQLScalarType | GraphQLEnumType):
        return None
    unchanged = _UNCHANGED.get(leaf.coerce_output_value, frozenset())
    return PlainField(definition.python_name, nullable, _coercion(leaf), unchanged)


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
            for response_name, field_details_list, plain in steps or _steps_of(
                parent_type, grouped_field_set
            ):
                if isinstance(plain, RelationStep):
                    if self.relations_in_place and position_context is None:
                        result = execute_relation(
                            self,
                            plain,
                            parent_type,
                            source_value,
                            field_details_list,
                            Path(path, response_name, parent_type.name),
                        )
                        results[response_name] = result
                        if is_awaitable(result):
                            awaitable_fields.append(response_name)
                        continue
                elif plain is not None:
                    try:
                        value = getattr(source_value, plain.attribute)
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
                    except Exception:  # execute_field reads it again and reports it
                        pass
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


_Step = tuple[str, FieldDetailsList, PlainField | RelationStep | None]


def _steps_of(parent_type: GraphQLObjectType, grouped_field_set: GroupedFieldSet) -> list[_Step]:
    """The fields of ``grouped_field_set``, each with its ``PlainField`` or ``RelationStep``
    if it is one."""
    steps: list[_Step] = []
    for response_name, field_details_list in grouped_field_set.items():
        node = field_details_list[0].node
        field = parent_type.fields.get(node.name.value)
        short: PlainField | RelationStep | None = None
        if field is not None:
            short = field.extensions.get(PLAIN)
            relation = field.extensions.get(RELATION)
            if short is None and relation is not None and not node.arguments:
                short = RelationStep(relation, field_details_list)
        steps.append((response_name, field_details_list, short))
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
