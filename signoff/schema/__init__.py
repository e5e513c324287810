"""The GraphQL schema: Strawberry types and roots that map GraphQL onto ``signoff.resolvers``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import strawberry
from graphql.error import GraphQLError
from strawberry.extensions import ParserCache
from strawberry.types.execution import ExecutionContext

from signoff.constants import QUERY_MAX_TOKENS
from signoff.schema.mutation import Mutation
from signoff.schema.query import Query
from signoff.schema.serving.execution import PlainFieldExecutor, plan_plain_fields
from signoff.schema.serving.operation import FinishOperation
from signoff.schema.serving.validation import CheckedValidation
from signoff.schema.subscription import Subscription


class CachedParse(ParserCache):
    """Strawberry's ``ParserCache``, except for a document that does not parse.

    ``ParserCache`` parses before the parsing hook yields, so its syntax error escapes
    the operation's extensions and reaches the client without ``ErrorMapping``
    (``FinishOperation``; no code). A document that fails here is left to Strawberry's
    own parse, whose error goes through ``ErrorMapping`` like any other.

    It also bounds the document's tokens (what Strawberry's ``MaxTokensLimiter`` does in
    a hook of its own), for this parse and Strawberry's.
    """

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        context.parse_options["max_tokens"] = QUERY_MAX_TOKENS
        with contextlib.suppress(GraphQLError, RecursionError):
            context.graphql_document = self.cached_parse_document(
                context.query, **context.parse_options
            )
        yield


class SignoffSchema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Logging happens in ``ErrorMapping`` (``FinishOperation``), without messages or
        stack traces."""


def build_schema(*, introspection: bool = True, **extra: Any) -> strawberry.Schema:
    """The schema with its extensions; ``introspection=False`` refuses ``__schema`` and
    ``__type`` (``INTROSPECTION_DISABLED``)."""
    schema = SignoffSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        extensions=[
            FinishOperation,
            lambda: CachedParse(maxsize=256),
            lambda: CheckedValidation(introspection),
        ],
        execution_context_class=PlainFieldExecutor,
        **extra,
    )
    plan_plain_fields(schema)
    return schema
