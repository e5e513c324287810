"""What every GraphQL operation leaves behind when it ends."""

from __future__ import annotations

from collections.abc import AsyncIterator

from graphql import GraphQLError
from strawberry.types.graphql import OperationType

from signoff.schema.context import Context
from signoff.schema.errors import ErrorMapping, mask_error
from signoff.schema.live import Detached
from signoff.schema.serving.metrics import count_errors, count_operation
from signoff.schema.serving.request_log import note_errors, note_operation, operation_name


class FinishOperation(ErrorMapping):
    """Code and mask the operation's errors (``ErrorMapping``), count them and the operation,
    note them on the request's log line, and return its connections to the pool. One hook for
    all of it: a subscription keeps its hooks alive while it lasts, and every hook of every
    extension costs each subscriber memory and each request time."""

    async def on_operation(self) -> AsyncIterator[None]:  # type: ignore[override]
        mapping = super().on_operation()
        next(mapping)
        try:
            yield
        except Detached as detached:
            # The subscription goes on without this operation; its transport finishes it
            # (``finish_detached``) when it ends.
            detached.operation_name = operation_name(self.execution_context)
            raise
        for _ in mapping:  # the rest of ErrorMapping's hook: code and mask the errors
            pass
        execution = self.execution_context
        count_operation(execution)
        note_operation(execution)
        if isinstance(execution.context, Context):
            await execution.context.close()


def stream_error(exc: Exception, context: object) -> GraphQLError:
    """The error that ended a handed-over subscription (``schema.live.Detached``), as
    Strawberry sends the error of a failing stream: coerced to a ``GraphQLError`` and
    masked (``ErrorMapping``)."""
    error = exc if isinstance(exc, GraphQLError) else GraphQLError(str(exc), original_error=exc)
    return mask_error(error, getattr(context, "request_id", None))


async def finish_detached(name: str | None, errors: list[GraphQLError], context: object) -> None:
    """What ``FinishOperation`` does when a subscription ends, for one handed over."""
    count_errors(OperationType.SUBSCRIPTION.value, errors)
    note_errors(name, errors)
    if isinstance(context, Context):
        await context.close()
