"""Every pooled connection in use for the pool's whole timeout (a burst of subscribers, a
flood of requests) is the database being busy: ``DATABASE_BUSY``, retry, nothing changed;
never ``INTERNAL``."""

from __future__ import annotations

import logging

import pytest
from graphql import GraphQLError
from sqlalchemy import text
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import create_async_engine

from signoff.config import normalise_database_url
from signoff.database import POOL_EXHAUSTED, database_condition, is_busy, is_unreachable
from signoff.schema.errors import mask_error


async def exhausted_pool_error(database_url: str) -> PoolTimeout:
    """What a real pool of one raises when its only connection stays checked out."""
    engine = create_async_engine(
        normalise_database_url(database_url), pool_size=1, max_overflow=0, pool_timeout=0.1
    )
    try:
        async with engine.connect() as held:
            await held.execute(text("SELECT 1"))
            with pytest.raises(PoolTimeout) as raised:
                async with engine.connect():
                    pass
        return raised.value
    finally:
        await engine.dispose()


async def test_an_exhausted_pool_is_a_busy_database(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    error = await exhausted_pool_error(database_url)
    assert database_condition(error) == POOL_EXHAUSTED
    assert is_busy(error) and not is_unreachable(error)

    with caplog.at_level(logging.WARNING, logger="signoff"):
        masked = mask_error(GraphQLError("boom", path=["queues"], original_error=error), "r-1")
    assert masked.extensions == {"code": "DATABASE_BUSY", "requestId": "r-1"}
    assert "busy" in masked.message and "nothing was changed" in masked.message
    assert POOL_EXHAUSTED in caplog.text and "QueuePool" not in caplog.text
