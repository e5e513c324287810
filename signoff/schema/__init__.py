"""The GraphQL schema: Strawberry types and roots that map GraphQL onto ``signoff.resolvers``."""

from __future__ import annotations

from typing import Any

import strawberry
from graphql.error import GraphQLError
from strawberry.schema.config import StrawberryConfig
from strawberry.types.execution import ExecutionContext

from signoff.schema.mutation import Mutation
from signoff.schema.number import NUMBER, Number
from signoff.schema.query import Query
from signoff.schema.serving.execution import PlainFieldExecutor, plan_plain_fields
from signoff.schema.serving.operation import ServeOperation
from signoff.schema.subscription import Subscription


class SignoffSchema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Logging happens in ``ErrorMapping`` (``ServeOperation``), without messages or
        stack traces."""


def build_schema(
    *, introspection: bool = True, short_paths: bool = True, **extra: Any
) -> strawberry.Schema:
    """The schema with its extensions; ``introspection=False`` refuses ``__schema`` and
    ``__type`` (``INTROSPECTION_DISABLED``). ``short_paths=False`` builds the reference the
    short paths are tested against: the same schema executed by Strawberry's executor as
    graphql-core runs it (``schema.serving.execution``)."""
    schema = SignoffSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        extensions=[lambda: ServeOperation(introspection)],
        execution_context_class=PlainFieldExecutor if short_paths else None,
        config=StrawberryConfig(scalar_map={Number: NUMBER}),
        **extra,
    )
    if short_paths:
        plan_plain_fields(schema)
    return schema
