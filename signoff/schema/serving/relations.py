"""Relations completed in place: an object, or a list of objects, that a resolver answered
at once has its sub-fields executed without graphql-core's chain of completion calls
(``complete_value`` … ``collect_and_execute_subfields``), which for a page's loaded
relations only check what is checked here once per field. Anything else (an awaitable, a
null, a value of another type, an error) goes to graphql-core's own completion with the
resolver's result (docs/design.md section 12, Execution).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from graphql import (
    GraphQLField,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
)
from graphql.execution.executor import to_nodes
from graphql.pyutils import AwaitableOrValue, Path, gather_with_cancel

from signoff.internals import (
    CollectedFields,
    FieldDetailsList,
    StrawberryExecutionContext,
    ignores_info,
)

# The executor these functions serve (``execution.PlainFieldExecutor``), as graphql-core's.
Executor = StrawberryExecutionContext


@dataclass(frozen=True, slots=True)
class Relation:
    """A field without arguments whose type is an object type or a list of one."""

    field: GraphQLField
    object_type: GraphQLObjectType
    # For a list: the type of its items (the object type, non-null or not); else None.
    item_type: GraphQLOutputType | None
    # What answers it from the source and the execution's context, where its resolver
    # needs nothing else of Strawberry's Info (``schema.loaders.loaded_field``).
    answer: Callable[[Any, Any], Any] | None = None
    # The object type's ``is_type_of`` never reads its resolve info (Strawberry's): with
    # ``answer``, an info is built only for a value graphql-core completes.
    checks_without_info: bool = False


class RelationStep:
    """A relation where one operation selects it: its sub-fields, collected once (an
    operation without directives collects the same sub-fields in every execution)."""

    __slots__ = ("nodes", "relation", "subfields")

    def __init__(self, relation: Relation, field_details_list: FieldDetailsList) -> None:
        self.relation = relation
        self.nodes = to_nodes(field_details_list)
        self.subfields: CollectedFields | None = None


def relation_of(
    field: GraphQLField, answer: Callable[[Any, Any], Any] | None = None
) -> Relation | None:
    if field.args:
        return None
    inner = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
    item = None
    if isinstance(inner, GraphQLList):
        item = inner.of_type
        inner = item.of_type if isinstance(item, GraphQLNonNull) else item
    if not isinstance(inner, GraphQLObjectType):
        return None
    is_type_of = inner.is_type_of
    checks_without_info = is_type_of is None or ignores_info(is_type_of)
    return Relation(field, inner, item, answer, checks_without_info)


def execute_relation(
    executor: Executor,
    step: RelationStep,
    parent_type: GraphQLObjectType,
    source: Any,
    field_details_list: FieldDetailsList,
    path: Path,
) -> AwaitableOrValue[Any]:
    """graphql-core's ``execute_field`` for a relation, with its value completed in place
    where it can be (no middleware, no directive in the operation, no argument)."""
    relation = step.relation
    field = relation.field
    return_type = field.type
    answer = relation.answer
    lazy = answer is not None and relation.checks_without_info
    info = None if lazy else executor.build_resolve_info(field, step.nodes, parent_type, path)
    try:
        if answer is not None:
            result = answer(source, executor.context_value)
        else:
            result = field.resolve(source, info)  # type: ignore[misc]
        if type(result) not in SYNC and executor.is_awaitable(result):
            info = _info(executor, step, parent_type, path, info)
            return executor.complete_awaitable_value(
                return_type, field_details_list, info, path, result, None
            )
        item_type = relation.item_type
        completed: AwaitableOrValue[Any]
        if item_type is None and _is_object(relation, result, info):
            completed = _subfields(executor, step, field_details_list, path, result)
        elif item_type is not None and type(result) is list:
            completed = _items(executor, step, field_details_list, parent_type, path, info, result)
        else:
            info = _info(executor, step, parent_type, path, info)
            completed = executor.complete_value(
                return_type, field_details_list, info, path, result, None
            )
        if type(completed) not in SYNC and executor.is_awaitable(completed):
            return _settled(executor, completed, return_type, field_details_list, path)
    except Exception as raw_error:
        executor.handle_field_error(raw_error, return_type, field_details_list, path)
        return None
    return completed


# Values that are never awaitable: checked before the executor's ``is_awaitable`` is called.
SYNC = frozenset({type(None), dict, list, str, int, float, bool})


def _info(
    executor: Executor,
    step: RelationStep,
    parent_type: GraphQLObjectType,
    path: Path,
    info: GraphQLResolveInfo[Any] | None,
) -> GraphQLResolveInfo[Any]:
    """The relation's resolve info: ``info``, or built now (for graphql-core's completion)."""
    if info is not None:
        return info
    return executor.build_resolve_info(step.relation.field, step.nodes, parent_type, path)


def _is_object(relation: Relation, value: Any, info: GraphQLResolveInfo[Any] | None) -> bool:
    """A value ``complete_object_value`` would execute the sub-fields of at once (``info``
    is None only where the type's check does not read it)."""
    if value is None or isinstance(value, Exception):
        return False
    is_type_of = relation.object_type.is_type_of
    # ``info`` is None only where the check does not read it (``checks_without_info``).
    return is_type_of is None or is_type_of(value, info) is True  # type: ignore[arg-type]


def _subfields(
    executor: Executor,
    step: RelationStep,
    field_details_list: FieldDetailsList,
    path: Path,
    value: Any,
) -> AwaitableOrValue[dict[str, Any]]:
    object_type = step.relation.object_type
    collected = step.subfields
    if collected is None:
        collected = step.subfields = executor.collect_subfields(object_type, field_details_list)
    grouped_field_set, new_defer_usages, _ = collected
    if not new_defer_usages:  # what execute_collected_subfields does without @defer
        return executor.execute_fields(object_type, value, path, grouped_field_set, None)
    return executor.execute_collected_subfields(
        object_type, value, path, grouped_field_set, new_defer_usages, None
    )


def _items(
    executor: Executor,
    step: RelationStep,
    field_details_list: FieldDetailsList,
    parent_type: GraphQLObjectType,
    path: Path,
    info: GraphQLResolveInfo[Any] | None,
    items: list[Any],
) -> AwaitableOrValue[list[Any]]:
    """``complete_iterable_value`` of a list (there is no ``@stream`` without directives)."""
    relation = step.relation
    item_type = relation.item_type
    assert item_type is not None
    is_awaitable = executor.is_awaitable
    completed: list[Any] = []
    awaitable_indices: list[int] = []
    try:
        for index, item in enumerate(items):
            item_path = path.add_key(index, None)
            if is_awaitable(item):
                info = _info(executor, step, parent_type, path, info)
                completed.append(
                    executor.complete_awaitable_list_item_value(
                        item, item_type, field_details_list, info, item_path, None
                    )
                )
                awaitable_indices.append(index)
            elif not _is_object(relation, item, info):
                info = _info(executor, step, parent_type, path, info)
                if executor.complete_list_item_value(
                    item, completed, item_type, field_details_list, info, item_path, None
                ):
                    awaitable_indices.append(index)
            elif _item_in_place(
                executor, step, item_type, field_details_list, item_path, item, completed
            ):
                awaitable_indices.append(index)
    except Exception:
        pending = [completed[index] for index in awaitable_indices]
        pending.extend(item for item in items[len(completed) :] if is_awaitable(item))
        if pending:
            executor.settle_in_background(pending)
        raise
    if not awaitable_indices:
        return completed
    return _gathered_items(completed, awaitable_indices)


def _item_in_place(
    executor: Executor,
    step: RelationStep,
    item_type: GraphQLOutputType,
    field_details_list: FieldDetailsList,
    item_path: Path,
    item: Any,
    completed: list[Any],
) -> bool:
    """``complete_list_item_value`` of an object: True if what it appended is awaitable."""
    try:
        value = _subfields(executor, step, field_details_list, item_path, item)
    except Exception as raw_error:
        executor.handle_field_error(raw_error, item_type, field_details_list, item_path)
        completed.append(None)
        return False
    if type(value) is not dict and executor.is_awaitable(value):
        completed.append(_settled(executor, value, item_type, field_details_list, item_path))
        return True
    completed.append(value)
    return False


async def _settled(
    executor: Executor,
    completed: Awaitable[Any],
    return_type: GraphQLOutputType,
    field_details_list: FieldDetailsList,
    path: Path,
) -> Any:
    try:
        return await completed
    except Exception as raw_error:
        executor.handle_field_error(raw_error, return_type, field_details_list, path)
        return None


async def _gathered_items(completed: list[Any], awaitable_indices: list[int]) -> list[Any]:
    if len(awaitable_indices) == 1:
        index = awaitable_indices[0]
        completed[index] = await completed[index]
        return completed
    values = await gather_with_cancel(*(completed[index] for index in awaitable_indices))
    for index, value in zip(awaitable_indices, values, strict=True):
        completed[index] = value
    return completed
