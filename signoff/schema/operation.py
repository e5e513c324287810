"""What every GraphQL operation leaves behind when it ends."""

from __future__ import annotations

from collections.abc import AsyncIterator

from strawberry.extensions import SchemaExtension

from signoff.schema.context import Context
from signoff.schema.metrics import count_operation
from signoff.schema.request_log import note_operation


class FinishOperation(SchemaExtension):
    """Count the operation and its error codes (``/metrics``), note its name and code on
    the request's log line, and return the request's database connections to the pool.

    Listed before ``ErrorMapping``, so it leaves after it and sees the codes as sent. One
    extension rather than one per concern: a subscription keeps its operation's hooks
    alive for as long as it lasts, and every hook costs each subscriber memory and every
    request time.
    """

    async def on_operation(self) -> AsyncIterator[None]:
        yield
        execution = self.execution_context
        count_operation(execution)
        note_operation(execution)
        if isinstance(execution.context, Context):
            await execution.context.close()
