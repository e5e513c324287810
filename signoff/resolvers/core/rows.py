"""Reading one row by id, or refusing: the lookup every resolver starts from."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlmodel import SQLModel
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import NotFound

M = TypeVar("M", bound=SQLModel)


async def require_row(
    session: AsyncSession,
    model: type[M],
    row_id: str,
    missing: str,
    *,
    refresh: bool = False,
    **details: Any,
) -> M:
    """The row, or ``NotFound(missing, **details)``; ``refresh`` reads it again even if the
    session holds it (after a rollback, or for a replay)."""
    row = await session.get(model, row_id, populate_existing=refresh)
    if row is None:
        raise NotFound(missing, **details)
    return row
