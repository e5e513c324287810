"""What a request's log line says about its GraphQL operation (``signoff.logs``)."""

from __future__ import annotations

from graphql import FieldNode, GraphQLError, OperationDefinitionNode
from strawberry.types import ExecutionContext

from signoff.logs import note


def note_operation(context: ExecutionContext) -> None:
    """Put a finished operation's name and first error code on the request's log line (run
    after ``ErrorMapping``, so the code is the one sent)."""
    note_errors(operation_name(context), getattr(context.result, "errors", None) or [])


def note_errors(name: str | None, errors: list[GraphQLError]) -> None:
    """Put operation ``name`` and the first of ``errors``' codes on the request's log line."""
    codes = [(error.extensions or {}).get("code") for error in errors]
    note(operation=name, error_code=next((c for c in codes if isinstance(c, str)), None))


def operation_name(context: ExecutionContext) -> str | None:
    """The operation's name, or for an anonymous one its root fields (``proposals,queue``)."""
    try:
        if context.operation_name:
            return context.operation_name
    except Exception:  # several operations, none chosen: execution refuses it
        return None
    document = context.graphql_document
    if document is None:
        return None
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            fields = definition.selection_set.selections
            return ",".join(f.name.value for f in fields if isinstance(f, FieldNode)) or None
    return None
