"""How a root field calls a resolver: authenticate, then run it on the request's session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import strawberry
from graphql import OperationType

from signoff.schema.context import context_of

R = TypeVar("R")


async def call(info: strawberry.Info, resolver: Callable[..., Awaitable[R]], **kwargs: Any) -> R:
    """Mutations run on the write session; queries on a read session, which on SQLite
    never waits for (or holds) the write lock."""
    ctx = context_of(info)
    viewer = await ctx.viewer()
    if info.operation.operation is not OperationType.MUTATION:
        async with ctx.read() as session:
            return await resolver(session=session, viewer=viewer, **kwargs)
    async with ctx.work() as work:
        result = await resolver(work=work, viewer=viewer, **kwargs)
    await ctx.end_reads()
    return result
