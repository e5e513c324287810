"""How a root field calls a resolver: authenticate, then run it on the request's session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import strawberry

from signoff.schema.context import context_of

R = TypeVar("R")


async def call(info: strawberry.Info, resolver: Callable[..., Awaitable[R]], **kwargs: Any) -> R:
    ctx = context_of(info)
    viewer = await ctx.viewer()
    async with ctx.db() as session:
        return await resolver(session=session, viewer=viewer, **kwargs)
