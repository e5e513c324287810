"""Counting GraphQL operations and the errors clients were given, by ``extensions.code``."""

from __future__ import annotations

from collections.abc import Iterator

from graphql.error import GraphQLError
from strawberry.extensions import SchemaExtension

from signoff import metrics
from signoff.errors import INTERNAL

UNKNOWN_OPERATION = "unknown"


class CountOperations(SchemaExtension):
    """Listed before ``ErrorMapping``, so it leaves last and counts the codes as sent."""

    def on_operation(self) -> Iterator[None]:
        yield
        context = self.execution_context
        try:
            operation = context.operation_type.value
        except Exception:  # no document (a syntax error) or no such operation name
            operation = UNKNOWN_OPERATION
        errors: list[GraphQLError] = getattr(context.result, "errors", None) or []
        metrics.observe_graphql(operation, (_code(error) for error in errors))


def _code(error: GraphQLError) -> str:
    code = (error.extensions or {}).get("code")
    return code if isinstance(code, str) else INTERNAL
