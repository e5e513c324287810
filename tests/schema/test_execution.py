"""The executor's short path for plain leaf fields answers what graphql-core's own path
answers: the same data, and for a value the type refuses or a null where none may be, the
same error at the same place."""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any

import pytest
import strawberry
from graphql import DocumentNode, ExecutionResult, GraphQLObjectType, parse
from strawberry.scalars import JSON
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from signoff.models import ProposalState
from signoff.schema import build_schema
from signoff.schema.serving.execution import (
    PLAIN,
    RELATION,
    PlainFieldExecutor,
    plan_plain_fields,
    shared_collections,
)


@strawberry.enum
class Colour(enum.Enum):
    RED = "red"
    CRIMSON = "red"  # an alias: both name the member RED
    BLUE = "blue"


@strawberry.type
class Leaf:
    id: strawberry.ID
    name: str
    count: int
    maybe: str | None
    colour: Colour
    state: ProposalState
    at: datetime
    data: JSON
    hidden: strawberry.Private[str] = ""

    @strawberry.field
    def computed(self) -> str:
        return self.name.upper()

    @strawberry.field
    def asked_as(self, info: strawberry.Info) -> str:
        return f"{info.field_name} as {info.python_name}"

    @strawberry.field
    def failing(self) -> str | None:
        raise ValueError("a resolver failed")


@strawberry.type
class Query:
    @strawberry.field
    def leaves(self) -> list[Leaf]:
        return LEAVES

    @strawberry.field
    def broken(self) -> Leaf:
        return BROKEN["leaf"]


def _leaf(**changes: Any) -> Leaf:
    values: dict[str, Any] = {
        "id": strawberry.ID("l-1"),
        "name": "first",
        "count": 3,
        "maybe": None,
        "colour": Colour.BLUE,
        "state": ProposalState.APPROVAL_REQUIRED,
        "at": datetime(2026, 12, 4, 7, 30, tzinfo=UTC),
        "data": JSON({"a": [1, 2.5, None, "x"]}),
    }
    return Leaf(**(values | changes))


LEAVES = [_leaf(), _leaf(id=strawberry.ID("l-2"), colour=Colour.RED, maybe="here", count=-7)]
BROKEN = {"leaf": _leaf()}  # a test puts in a leaf holding a value its type refuses
DOCUMENT = (
    "{ leaves { id name count maybe colour state at data computed askedAs failing __typename } }"
)
BROKEN_DOCUMENT = "{ broken { id name count colour } }"


def _schemas() -> tuple[strawberry.Schema, strawberry.Schema]:
    plain = strawberry.Schema(query=Query, execution_context_class=PlainFieldExecutor)
    plan_plain_fields(plain)
    graphql_core = strawberry.Schema(
        query=Query, execution_context_class=StrawberryGraphQLCoreExecutionContext
    )
    return plain, graphql_core


def _run(schema: strawberry.Schema, document: str) -> ExecutionResult:
    return schema.execute_sync(document)


def _shape(result: ExecutionResult) -> tuple[Any, list[tuple[str, Any]]]:
    errors = [(e.message, e.path) for e in result.errors or []]
    return result.data, errors


def test_plain_fields_are_the_leaves_read_off_their_parent() -> None:
    plain, _ = _schemas()
    leaf = plain._schema.type_map["Leaf"]
    assert isinstance(leaf, GraphQLObjectType)
    plans = {
        name: field.extensions[PLAIN]
        for name, field in leaf.fields.items()
        if PLAIN in field.extensions
    }
    planned = {name for name, plan in plans.items() if not plan.resolved}
    assert planned == {"id", "name", "count", "maybe", "colour", "state", "at", "data"}
    # Resolvers that take only their object are called directly; one taking Info is not.
    assert {name for name, plan in plans.items() if plan.resolved} == {"computed", "failing"}
    unchanged = {name: leaf.fields[name].extensions[PLAIN].unchanged for name in planned}
    assert unchanged["id"] == unchanged["name"] == {str}
    assert str in unchanged["data"] and dict in unchanged["data"]
    assert not unchanged["count"] and not unchanged["at"] and not unchanged["colour"]
    query = plain._schema.type_map["Query"]
    assert isinstance(query, GraphQLObjectType)
    assert not any(PLAIN in field.extensions for field in query.fields.values())


def test_a_page_of_leaves_answers_as_graphql_core_does() -> None:
    plain, graphql_core = _schemas()
    result = _run(plain, DOCUMENT)
    assert _shape(result) == _shape(_run(graphql_core, DOCUMENT))
    # A resolver called directly fails where it failed, its field null, the rest answered.
    assert [(e.message, e.path) for e in result.errors or []] == [
        ("a resolver failed", ["leaves", 0, "failing"]),
        ("a resolver failed", ["leaves", 1, "failing"]),
    ]
    assert result.data is not None
    first, second = result.data["leaves"]
    assert first["askedAs"] == "askedAs as asked_as" and first["failing"] is None
    assert first["colour"] == "BLUE" and second["colour"] == "RED"
    assert first["state"] == "APPROVAL_REQUIRED"
    assert first["at"] == "2026-12-04T07:30:00+00:00"


def test_the_short_path_never_calls_a_plain_field_resolver() -> None:
    plain, graphql_core = _schemas()
    expected = _run(graphql_core, DOCUMENT)
    leaf = plain._schema.type_map["Leaf"]
    assert isinstance(leaf, GraphQLObjectType)

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("the plain field's resolver ran")

    for field in leaf.fields.values():
        if PLAIN in field.extensions:
            field.resolve = refuse
    assert _shape(_run(plain, DOCUMENT)) == _shape(expected)


@pytest.mark.parametrize(
    ("changes", "message_part"),
    [
        ({"name": None}, "Cannot return null for non-nullable field Leaf.name."),
        ({"count": "three"}, "Int cannot represent non-integer value"),
        ({"count": 2**40}, "Int cannot represent non 32-bit signed integer value"),
        ({"colour": "purple"}, "Enum 'Colour' cannot represent value"),
        ({"name": ["a", "list"]}, "String cannot represent value"),
        ({"id": {"a": "dict"}}, "ID cannot represent value"),
    ],
)
def test_a_value_the_type_refuses_is_the_same_error_in_the_same_place(
    changes: dict[str, Any], message_part: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(BROKEN, "leaf", _leaf(**changes))
    plain, graphql_core = _schemas()
    result = _run(plain, BROKEN_DOCUMENT)
    assert result.errors, result
    assert message_part in result.errors[0].message
    assert _shape(result) == _shape(_run(graphql_core, BROKEN_DOCUMENT))


class Text(str):
    pass


@pytest.mark.parametrize(
    "changes",
    [
        {"name": True, "id": strawberry.ID("l-9")},
        {"name": 12, "id": 7},
        {"name": 2.5, "id": 7.0},
        {"name": Text("a str of another type"), "id": Text("i")},
        {"data": JSON((1, 2))},
        {"data": JSON(3.25)},
    ],
)
def test_values_coerced_or_passed_as_they_are_answer_as_graphql_core_does(
    changes: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(BROKEN, "leaf", _leaf(**changes))
    plain, graphql_core = _schemas()
    document = "{ broken { id name count data } }"
    ours, theirs = _run(plain, document), _run(graphql_core, document)
    assert _shape(ours) == _shape(theirs)
    assert ours.data is not None and ours.errors is None
    assert [type(v) for v in ours.data["broken"].values()] == [
        type(v)
        for v in theirs.data["broken"].values()  # type: ignore[index]
    ]


def test_signoffs_schema_answers_its_columns_on_the_short_path() -> None:
    schema = build_schema()._schema
    proposal = schema.type_map["Proposal"]
    assert isinstance(proposal, GraphQLObjectType)
    planned = {name for name, field in proposal.fields.items() if PLAIN in field.extensions}
    assert {"id", "state", "payload", "subject", "payloadDigest", "expiresAt"} <= planned
    assert not planned & {"target", "approvals", "task", "revisions"}
    # Read from the row only when selected: their JSON is decoded on first read.
    assert not planned & {"preconditions", "policyRule", "deadlinePolicy"}


def _executions(schema: strawberry.Schema, document: DocumentNode, **variables: Any) -> Any:
    executor = PlainFieldExecutor.build(schema._schema, document, raw_variable_values=variables)
    assert isinstance(executor, PlainFieldExecutor)
    return executor, executor.execute_operation()


def test_an_operation_without_directives_collects_its_fields_once_for_every_execution() -> None:
    plain, graphql_core = _schemas()
    text = "query Twice { leaves { id ...Names first: name } }"
    text += " fragment Names on Leaf { name ... on Leaf { colour } }"
    document = parse(text)
    first, first_result = _executions(plain, document)
    second, second_result = _executions(plain, document)
    assert first_result.errors is None
    assert first_result.data == second_result.data == graphql_core.execute_sync(text).data
    assert list(first_result.data["leaves"][0]) == ["id", "name", "colour", "first"]
    shared = shared_collections(first.operation, first.fragments)
    assert shared is not None and shared is shared_collections(second.operation, second.fragments)
    assert shared.collected and len(shared.steps) == len(shared.collected)


def test_executions_of_one_executor_keep_nothing_more_each() -> None:
    """A subscription renders every event with a copy of one executor: nothing may grow."""
    plain, _ = _schemas()
    executor, _ = _executions(plain, parse("query Many { leaves { id name } }"))
    shared = shared_collections(executor.operation, executor.fragments)
    assert shared is not None
    sizes = (len(shared.collected), len(shared.steps))
    for _ in range(50):
        event = executor.build_per_event_executor(None)
        assert event.execute_operation().data == {
            "leaves": [{"id": "l-1", "name": "first"}, {"id": "l-2", "name": "first"}]
        }
    assert (len(shared.collected), len(shared.steps)) == sizes
    assert not executor._relevant_sub_fields  # graphql-core's own memo is not used


@pytest.mark.parametrize(
    "selection",
    [
        "name @skip(if: $hide)",
        "name @include(if: $show)",
        "...Named @skip(if: $hide)",
        "... on Leaf @include(if: $show) { name }",
    ],
)
def test_a_directive_decides_its_fields_in_every_execution(selection: str) -> None:
    plain, _ = _schemas()
    text = f"query Q($hide: Boolean!, $show: Boolean!) {{ leaves {{ id {selection} }} }}"
    if "Named" in selection:
        text += " fragment Named on Leaf { name }"
    document = parse(text)
    executor, shown = _executions(plain, document, hide=False, show=True)
    _, hidden = _executions(plain, document, hide=True, show=False)
    _, shown_again = _executions(plain, document, hide=False, show=True)
    assert shared_collections(executor.operation, executor.fragments) is None
    named = [{"id": "l-1", "name": "first"}, {"id": "l-2", "name": "first"}]
    assert shown.data == shown_again.data == {"leaves": named}
    assert hidden.data == {"leaves": [{"id": "l-1"}, {"id": "l-2"}]}


# Relations: objects and lists of objects that their resolvers answer at once are completed
# in place; an awaitable, a null, a value of another type or an error goes to graphql-core.


@strawberry.interface
class Named:
    name: str


@strawberry.type
class Part(Named):
    label: str
    strict: str = "fine"

    @strawberry.field
    def again(self, info: strawberry.Info) -> Part | None:
        return None if info.path.key == "stop" else self

    @strawberry.field
    async def later(self) -> Part:
        return self

    @strawberry.field
    def failing(self) -> Part | None:
        raise ValueError("a relation failed")


def _part(label: str, strict: Any = "fine") -> Part:
    return Part(name=label.upper(), label=label, strict=strict)


PARTS: dict[str, Any] = {
    "one": _part("a"),
    "many": [_part("b"), _part("c")],
    "holes": [_part("d"), None, _part("e")],
    "strict": [_part("f"), _part("g", strict=None)],
    "mixed": [_part("h"), "not a part"],
}


async def _awaited(value: Any) -> Any:
    return value


@strawberry.type
class Holder:
    @strawberry.field
    def one(self) -> Part:
        return PARTS["one"]

    @strawberry.field
    def maybe(self) -> Part | None:
        return None

    @strawberry.field
    def missing(self) -> Part:
        return None  # type: ignore[return-value]  # a null where none may be

    @strawberry.field
    def many(self) -> list[Part]:
        return PARTS["many"]

    @strawberry.field
    def holes(self) -> list[Part | None]:
        return PARTS["holes"]

    @strawberry.field
    def strict_holes(self) -> list[Part]:
        return PARTS["holes"]

    @strawberry.field
    def strict(self) -> list[Part | None] | None:
        return PARTS["strict"]

    @strawberry.field
    def strict_list(self) -> list[Part] | None:
        return PARTS["strict"]

    @strawberry.field
    def mixed(self) -> list[Part | None]:
        return PARTS["mixed"]

    @strawberry.field
    def awaited_items(self) -> list[Part]:
        return [_awaited(part) for part in PARTS["many"]]  # type: ignore[misc]

    @strawberry.field
    def tuple_of(self) -> list[Part]:
        return tuple(PARTS["many"])  # type: ignore[return-value]

    @strawberry.field
    def wrong(self) -> Part:
        return "not a part"  # type: ignore[return-value]

    @strawberry.field
    def interface(self) -> Named:
        return PARTS["one"]


@strawberry.type
class HolderQuery:
    @strawberry.field
    def holder(self) -> Holder:
        return Holder()

    @strawberry.field
    def holders(self) -> list[Holder]:
        return [Holder(), Holder()]


RELATION_DOCUMENTS = [
    "{ holder { one { label again { name later { label } } } maybe { label } } }",
    "{ holders { many { label strict } holes { label } } }",
    "{ holder { missing { label } } }",
    "{ holder { strictHoles { label } } }",
    "{ holder { strict { label strict } } }",
    "{ holder { strictList { label strict } } }",
    "{ holder { mixed { label } } }",
    "{ holder { awaitedItems { label later { name } } tupleOf { label } } }",
    "{ holder { wrong { label } } }",
    "{ holder { interface { name ... on Part { label } } } }",
    "{ holder { one { failing { label } label } many { failing { label } } } }",
    "{ holder { one { stop: again { label } again { again { label } } } } }",
    "query { holder { one { label __typename } } }",
]


def _relation_schemas() -> tuple[strawberry.Schema, strawberry.Schema]:
    planned = strawberry.Schema(
        query=HolderQuery, types=[Part], execution_context_class=PlainFieldExecutor
    )
    plan_plain_fields(planned)
    graphql_core = strawberry.Schema(
        query=HolderQuery,
        types=[Part],
        execution_context_class=StrawberryGraphQLCoreExecutionContext,
    )
    return planned, graphql_core


def _located(result: ExecutionResult) -> tuple[Any, list[tuple[str, Any, Any]]]:
    errors = [(e.message, e.path, e.locations) for e in result.errors or []]
    return result.data, errors


def test_relations_are_planned_where_their_resolver_is_called_directly() -> None:
    planned, _ = _relation_schemas()
    holder = planned._schema.type_map["Holder"]
    assert isinstance(holder, GraphQLObjectType)
    relations = {name for name, field in holder.fields.items() if RELATION in field.extensions}
    # `interface` is abstract: graphql-core resolves its runtime type.
    assert relations == {
        "one",
        "maybe",
        "missing",
        "many",
        "holes",
        "strictHoles",
        "strict",
        "strictList",
        "mixed",
        "awaitedItems",
        "tupleOf",
        "wrong",
    }


@pytest.mark.parametrize("document", RELATION_DOCUMENTS)
async def test_a_relation_answers_as_graphql_core_does(document: str) -> None:
    planned, graphql_core = _relation_schemas()
    ours = await planned.execute(document)
    theirs = await graphql_core.execute(document)
    assert _located(ours) == _located(theirs)


def test_relations_complete_in_place_without_graphql_cores_completion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    planned, graphql_core = _relation_schemas()
    document = "{ holders { one { label again { label } } many { label } } }"
    expected = graphql_core.execute_sync(document)

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("graphql-core completed a relation answered at once")

    monkeypatch.setattr(PlainFieldExecutor, "complete_object_value", refuse)
    monkeypatch.setattr(PlainFieldExecutor, "complete_list_value", refuse)
    assert _located(planned.execute_sync(document)) == _located(expected)


CALLS: list[str] = []


@strawberry.type
class Resolved:
    """Leaves whose resolvers take only their object: called directly, once each."""

    @strawberry.field
    def fine(self) -> int:
        CALLS.append("fine")
        return 1

    @strawberry.field
    def refused(self) -> int:
        CALLS.append("refused")
        return "three"  # type: ignore[return-value]

    @strawberry.field
    def null(self) -> str:
        CALLS.append("null")
        return None  # type: ignore[return-value]

    @strawberry.field
    def failing(self) -> str:
        CALLS.append("failing")
        raise ValueError("a resolver failed")

    @strawberry.field
    def state(self) -> ProposalState:
        CALLS.append("state")
        return ProposalState.APPROVED


@strawberry.type
class ResolvedQuery:
    @strawberry.field
    def resolved(self) -> list[Resolved | None]:
        return [Resolved(), Resolved()]


@pytest.mark.parametrize("fields", ["fine state", "fine refused", "null state", "failing fine"])
def test_a_resolved_leaf_answers_as_graphql_core_does_calling_its_resolver_once(
    fields: str,
) -> None:
    plain = strawberry.Schema(query=ResolvedQuery, execution_context_class=PlainFieldExecutor)
    plan_plain_fields(plain)
    graphql_core = strawberry.Schema(
        query=ResolvedQuery, execution_context_class=StrawberryGraphQLCoreExecutionContext
    )
    document = f"{{ resolved {{ {fields} }} }}"
    CALLS.clear()
    expected = _run(graphql_core, document)
    expected_calls = sorted(CALLS)
    CALLS.clear()
    assert _shape(_run(plain, document)) == _shape(expected)
    assert sorted(CALLS) == expected_calls


class Refused(strawberry.BasePermission):
    message = "refused"

    def has_permission(self, source: Any, info: strawberry.Info, **kwargs: Any) -> bool:
        return False


@strawberry.type
class Guarded:
    open: str
    secret: str = strawberry.field(permission_classes=[Refused])


@strawberry.type
class GuardedQuery:
    @strawberry.field
    def guarded(self) -> Guarded | None:
        return Guarded(open="o", secret="s")


def test_a_field_with_a_permission_and_no_resolver_is_not_read_off_its_object() -> None:
    plain = strawberry.Schema(query=GuardedQuery, execution_context_class=PlainFieldExecutor)
    plan_plain_fields(plain)
    guarded = plain._schema.type_map["Guarded"]
    assert isinstance(guarded, GraphQLObjectType)
    assert PLAIN in guarded.fields["open"].extensions
    assert PLAIN not in guarded.fields["secret"].extensions
    result = _run(plain, "{ guarded { open secret } }")
    assert result.data == {"guarded": None}
    assert [e.message for e in result.errors or []] == ["refused"]
