"""What every GraphQL operation leaves behind when it ends."""

from __future__ import annotations

from collections.abc import AsyncIterator

from signoff.schema.context import Context
from signoff.schema.errors import ErrorMapping
from signoff.schema.serving.metrics import count_operation
from signoff.schema.serving.request_log import note_operation


class FinishOperation(ErrorMapping):
    """Code and mask the operation's errors (``ErrorMapping``), count them and the operation,
    note them on the request's log line, and return its connections to the pool. One hook for
    all of it: a subscription keeps its hooks alive while it lasts, and every hook of every
    extension costs each subscriber memory and each request time."""

    async def on_operation(self) -> AsyncIterator[None]:  # type: ignore[override]
        mapping = super().on_operation()
        next(mapping)
        yield
        for _ in mapping:  # the rest of ErrorMapping's hook: code and mask the errors
            pass
        execution = self.execution_context
        count_operation(execution)
        note_operation(execution)
        if isinstance(execution.context, Context):
            await execution.context.close()
