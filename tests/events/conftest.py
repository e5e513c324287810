"""Fixtures of the live-event tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from starlette.applications import Starlette

from tests.live import InProcessServer, serve_in_process


@pytest.fixture
async def live(app: Starlette) -> AsyncIterator[InProcessServer]:
    """The test's app served by uvicorn in the test's event loop, over real sockets."""
    async with serve_in_process(app) as server:
        yield server
