"""What every GraphQL operation leaves behind when it ends."""

from __future__ import annotations

from collections.abc import AsyncIterator

from signoff.schema.context import Context
from signoff.schema.errors import ErrorMapping
from signoff.schema.serving.metrics import count_operation
from signoff.schema.serving.request_log import note_operation


class FinishOperation(ErrorMapping):
    """Code and mask the operation's errors (``ErrorMapping``), then count the operation
    and its error codes (``/metrics``), note its name and code on the request's log line,
    and return the request's database connections to the pool.

    One extension with one operation hook rather than one per concern: a subscription
    keeps its operation's hooks alive for as long as it lasts, every hook costs each
    subscriber memory and every request time (Strawberry wraps each hook of each
    extension in a context manager per request), and the codes are counted and logged
    as sent.
    """

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
