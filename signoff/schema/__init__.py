"""The GraphQL schema: Strawberry types and roots that map GraphQL onto ``signoff.resolvers``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import strawberry
from graphql.error import GraphQLError
from strawberry.extensions import ParserCache, SchemaExtension
from strawberry.schema.config import StrawberryConfig
from strawberry.types.execution import ExecutionContext

from signoff.constants import QUERY_MAX_TOKENS
from signoff.internals import SchemaExtensionsRunner
from signoff.schema.mutation import Mutation
from signoff.schema.number import NUMBER, Number
from signoff.schema.query import Query
from signoff.schema.serving.execution import PlainFieldExecutor, plan_plain_fields
from signoff.schema.serving.hooks import PlannedHooksRunner
from signoff.schema.serving.operation import FinishOperation
from signoff.schema.serving.validation import CheckedValidation
from signoff.schema.subscription import Subscription


class CachedParse(ParserCache):
    """Strawberry's ``ParserCache``, except that a document that does not parse is left to
    Strawberry's own parse, so its syntax error is coded by ``ErrorMapping`` instead of
    escaping the extensions. It also bounds the document's tokens, for this parse and
    Strawberry's (what ``MaxTokensLimiter`` does in a hook of its own)."""

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        context.parse_options["max_tokens"] = QUERY_MAX_TOKENS
        with contextlib.suppress(GraphQLError, RecursionError):
            context.graphql_document = self.cached_parse_document(
                context.query, **context.parse_options
            )
        yield


class SignoffSchema(strawberry.Schema):
    # Set by ``build_schema`` unless it builds the reference (``short_paths=False``).
    planned_hooks = False

    def create_extensions_runner(
        self, execution_context: ExecutionContext, extensions: list[SchemaExtension]
    ) -> SchemaExtensionsRunner:
        if not self.planned_hooks:
            return super().create_extensions_runner(execution_context, extensions)
        return PlannedHooksRunner(execution_context=execution_context, extensions=extensions)

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Logging happens in ``ErrorMapping`` (``FinishOperation``), without messages or
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
        extensions=[
            FinishOperation,
            lambda: CachedParse(maxsize=256),
            lambda: CheckedValidation(introspection),
        ],
        execution_context_class=PlainFieldExecutor if short_paths else None,
        config=StrawberryConfig(scalar_map={Number: NUMBER}),
        **extra,
    )
    if short_paths:
        plan_plain_fields(schema)
        schema.planned_hooks = True
    return schema
