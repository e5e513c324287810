"""The GraphQL schema: Strawberry types and roots that map GraphQL onto ``signoff.resolvers``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import strawberry
from graphql import ASTValidationRule
from graphql.error import GraphQLError
from strawberry.extensions import (
    AddValidationRules,
    MaxTokensLimiter,
    ParserCache,
    SchemaExtension,
    ValidationCache,
)
from strawberry.extensions.max_aliases import create_validator as aliases_rule
from strawberry.extensions.query_depth_limiter import create_validator as depth_rule
from strawberry.types.execution import ExecutionContext

from signoff.constants import QUERY_MAX_ALIASES, QUERY_MAX_DEPTH, QUERY_MAX_TOKENS
from signoff.schema.context import Context
from signoff.schema.errors import ErrorMapping
from signoff.schema.metrics import CountOperations
from signoff.schema.mutation import Mutation
from signoff.schema.query import Query
from signoff.schema.request_log import NoteRequest
from signoff.schema.subscription import Subscription


class CloseSession(SchemaExtension):
    """Return the request's database connection to the pool when the operation ends."""

    async def on_operation(self) -> AsyncIterator[None]:
        yield
        context = self.execution_context.context
        if isinstance(context, Context):
            await context.close()


# Created once: ``ValidationCache`` keys on the rule classes, and Strawberry's limiter
# extensions make new ones for every operation, so nothing would ever hit the cache.
_LIMIT_RULES: list[type[ASTValidationRule]] = [
    depth_rule(QUERY_MAX_DEPTH, None),
    aliases_rule(QUERY_MAX_ALIASES),
]


class QueryLimits(AddValidationRules):
    """Query depth and alias limits, checked (and cached) with the rest of validation."""

    def __init__(self) -> None:
        super().__init__(_LIMIT_RULES)


class SignoffSchema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Logging happens in ``ErrorMapping``, without messages or stack traces."""


def build_schema(**extra: Any) -> strawberry.Schema:
    return SignoffSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        extensions=[
            CloseSession,
            CountOperations,
            QueryLimits,
            lambda: MaxTokensLimiter(max_token_count=QUERY_MAX_TOKENS),
            lambda: ParserCache(maxsize=256),
            lambda: ValidationCache(maxsize=256),
            NoteRequest,
            ErrorMapping,
        ],
        **extra,
    )
