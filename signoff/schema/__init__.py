"""The GraphQL schema: Strawberry types and roots that map GraphQL onto ``signoff.resolvers``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import strawberry
from graphql.error import GraphQLError
from strawberry.extensions import MaxTokensLimiter, ParserCache, SchemaExtension
from strawberry.types.execution import ExecutionContext

from signoff.constants import QUERY_MAX_TOKENS
from signoff.schema.context import Context
from signoff.schema.errors import ErrorMapping
from signoff.schema.metrics import CountOperations
from signoff.schema.mutation import Mutation
from signoff.schema.query import Query
from signoff.schema.request_log import NoteRequest
from signoff.schema.subscription import Subscription
from signoff.schema.validation import CheckedValidation


class CloseSession(SchemaExtension):
    """Return the request's database connection to the pool when the operation ends."""

    async def on_operation(self) -> AsyncIterator[None]:
        yield
        context = self.execution_context.context
        if isinstance(context, Context):
            await context.close()


class CachedParse(ParserCache):
    """Strawberry's ``ParserCache``, except for a document that does not parse.

    ``ParserCache`` parses before the parsing hook yields, so its syntax error escapes
    the operation's extensions and reaches the client without ``ErrorMapping`` (no
    code). A document that fails here is left to Strawberry's own parse, whose error
    goes through ``ErrorMapping`` like any other.
    """

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        with contextlib.suppress(GraphQLError, RecursionError):
            context.graphql_document = self.cached_parse_document(
                context.query, **context.parse_options
            )
        yield


class SignoffSchema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Logging happens in ``ErrorMapping``, without messages or stack traces."""


def build_schema(*, introspection: bool = True, **extra: Any) -> strawberry.Schema:
    """The schema with its extensions; ``introspection=False`` refuses ``__schema`` and
    ``__type`` (``INTROSPECTION_DISABLED``)."""
    return SignoffSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        extensions=[
            CloseSession,
            CountOperations,
            lambda: MaxTokensLimiter(max_token_count=QUERY_MAX_TOKENS),
            lambda: CachedParse(maxsize=256),
            lambda: CheckedValidation(introspection),
            NoteRequest,
            ErrorMapping,
        ],
        **extra,
    )
