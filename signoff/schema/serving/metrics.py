"""Counting GraphQL operations and the errors clients were given, by ``extensions.code``."""

from __future__ import annotations

from graphql.error import GraphQLError
from strawberry.types import ExecutionContext

from signoff import metrics
from signoff.errors import INTERNAL

UNKNOWN_OPERATION = "unknown"


def count_operation(context: ExecutionContext) -> None:
    """Count a finished operation and the codes of the errors it was answered with (run
    after ``ErrorMapping``, so these are the codes as sent)."""
    try:
        operation = context.operation_type.value
    except Exception:  # no document (a syntax error) or no such operation name
        operation = UNKNOWN_OPERATION
    count_errors(operation, getattr(context.result, "errors", None) or [])


def count_errors(operation: str, errors: list[GraphQLError]) -> None:
    """Count an operation of type ``operation`` answered with ``errors``."""
    metrics.observe_graphql(operation, (_code(error) for error in errors))


def _code(error: GraphQLError) -> str:
    code = (error.extensions or {}).get("code")
    return code if isinstance(code, str) else INTERNAL
