"""What every GraphQL operation leaves behind when it ends."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from functools import lru_cache

from graphql import GraphQLError
from graphql.language.parser import parse
from strawberry.types.graphql import OperationType

from signoff.constants import QUERY_MAX_TOKENS
from signoff.schema.context import Context
from signoff.schema.errors import ErrorMapping, mask_error
from signoff.schema.live import Detached
from signoff.schema.serving.metrics import count_errors, count_operation
from signoff.schema.serving.request_log import note_errors, note_operation, operation_name
from signoff.schema.serving.validation import check_document

# Documents parsed, by their text (and parse options), shared by every operation.
PARSED_DOCUMENTS = 256
cached_parse = lru_cache(maxsize=PARSED_DOCUMENTS)(parse)


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


class ServeOperation(FinishOperation):
    """Every hook Signoff puts on an operation, in one extension: ``FinishOperation``'s, the
    cached parse and the checked validation. Strawberry makes each extension and looks up
    each of its hooks on every operation, and a subscription keeps its extensions while it
    lasts: one extension costs a request and a subscriber less than three."""

    def __init__(self, introspection: bool = True) -> None:
        super().__init__()
        self.introspection = introspection

    def on_parse(self) -> Iterator[None]:
        """Parse through a cache shared by all operations. A document that does not parse
        is left to Strawberry's own parse, so its syntax error is coded by ``ErrorMapping``
        instead of escaping the extensions. The document's tokens are bounded, for this
        parse and Strawberry's (what ``MaxTokensLimiter`` does in a hook of its own)."""
        context = self.execution_context
        context.parse_options["max_tokens"] = QUERY_MAX_TOKENS
        with contextlib.suppress(GraphQLError, RecursionError):
            context.graphql_document = cached_parse(context.query, **context.parse_options)
        yield

    def on_validate(self) -> Iterator[None]:
        check_document(self.execution_context, self.introspection)
        yield


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
