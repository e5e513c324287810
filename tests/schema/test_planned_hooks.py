"""Extension hooks found once per class (``signoff.schema.serving.hooks``) run as
Strawberry's runner runs them: the same hooks, in the same order, seeing the same
exceptions, with the same answers, for hooks of every kind (generator, async generator,
plain function, coroutine function), several in one phase, none in another, and a hook
that swallows an error or fails."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import strawberry
from strawberry.extensions import SchemaExtension
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.types.execution import ExecutionContext

from signoff.schema.serving.hooks import PlannedHooksRunner


@strawberry.type
class Query:
    @strawberry.field
    def greeting(self) -> str:
        return "hello"

    @strawberry.field
    def failing(self) -> str:
        raise ValueError("no greeting")


EVENTS: list[str] = []


class Generators(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        EVENTS.append("generator operation in")
        yield
        EVENTS.append(f"generator operation out {self.execution_context.result is not None}")

    def on_parse(self) -> Iterator[None]:
        EVENTS.append("generator parse in")
        yield
        EVENTS.append("generator parse out")

    def on_execute(self) -> Iterator[None]:
        EVENTS.append("generator execute in")
        try:
            yield
        except RuntimeError as error:
            EVENTS.append(f"generator execute saw {error}")
            raise
        EVENTS.append("generator execute out")


class AsyncGenerators(SchemaExtension):
    async def on_operation(self) -> AsyncIterator[None]:  # type: ignore[override]
        EVENTS.append("async operation in")
        yield
        EVENTS.append("async operation out")

    async def on_execute(self) -> AsyncIterator[None]:  # type: ignore[override]
        EVENTS.append("async execute in")
        yield
        EVENTS.append("async execute out")


class Callables(SchemaExtension):
    def on_validate(self) -> None:  # type: ignore[override]
        EVENTS.append("callable validate")

    async def on_execute(self) -> None:  # type: ignore[override]
        EVENTS.append("coroutine execute")


class Failing(SchemaExtension):
    """Fails as execution begins when the query asks it to."""

    def on_execute(self) -> Iterator[None]:
        if "boom" in (self.execution_context.query or ""):
            raise RuntimeError("boom")
        yield


class Swallowing(SchemaExtension):
    """Swallows what fails inside execution, leaving no result."""

    def on_execute(self) -> Iterator[None]:
        try:
            yield
        except RuntimeError:
            EVENTS.append("swallowed")


class SwallowingOperation(SchemaExtension):
    """Swallows what fails in the operation (a document of two unnamed operations)."""

    def on_operation(self) -> Iterator[None]:
        try:
            yield
        except Exception as error:
            EVENTS.append(f"operation swallowed {type(error).__name__}")


class AsyncSwallowingOperation(SchemaExtension):
    async def on_operation(self) -> AsyncIterator[None]:  # type: ignore[override]
        try:
            yield
        except Exception as error:
            EVENTS.append(f"async operation swallowed {type(error).__name__}")


class Planned(strawberry.Schema):
    def create_extensions_runner(
        self, execution_context: ExecutionContext, extensions: list[SchemaExtension]
    ) -> SchemaExtensionsRunner:
        return PlannedHooksRunner(execution_context=execution_context, extensions=extensions)


EXTENSIONS: list[list[type[SchemaExtension]]] = [
    [],
    [Generators],
    [AsyncGenerators],
    [Callables],
    [Generators, AsyncGenerators, Callables],
    [Swallowing, Generators, Failing],
    [Generators, Failing],
    [Failing],
    [SwallowingOperation],
    [AsyncSwallowingOperation],
    [SwallowingOperation, Failing],
    [AsyncSwallowingOperation, Swallowing, Failing],
]
QUERIES = [
    "{ greeting }",
    "{ failing }",
    "{ nope }",
    "{ greeting",
    "query boom { greeting }",
    "query A { greeting } query B { greeting }",
]


async def _run(schema: strawberry.Schema, query: str) -> tuple[list[str], Any]:
    EVENTS.clear()
    try:
        result = await schema.execute(query)
    except Exception as error:
        return list(EVENTS), ("raised", type(error).__name__, str(error))
    errors = [(e.message, e.path) for e in result.errors or []]
    return list(EVENTS), (result.data, errors, result.extensions)


@pytest.mark.parametrize("extensions", EXTENSIONS)
async def test_planned_hooks_run_as_strawberrys_runner_runs_them(
    extensions: list[type[SchemaExtension]],
) -> None:
    stock = strawberry.Schema(query=Query, extensions=extensions)
    planned = Planned(query=Query, extensions=extensions)
    for query in QUERIES:
        assert await _run(planned, query) == await _run(stock, query), query


def test_planned_hooks_refuse_an_async_hook_in_a_sync_execution_as_strawberry_does() -> None:
    answers = []
    for schema_class in (strawberry.Schema, Planned):
        schema = schema_class(query=Query, extensions=[AsyncGenerators])
        result = schema.execute_sync("{ greeting }")
        # The message names the extension object, at its own address.
        answers.append(
            (result.data, [re.sub(r" at 0x[0-9a-f]+", "", e.message) for e in result.errors or []])
        )
    assert answers[0] == answers[1]
    assert "failed to complete synchronously" in answers[0][1][0]
