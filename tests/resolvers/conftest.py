"""What the resolvers' property tests share."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from signoff.database import create_engine
from signoff.migrate import migrate
from tests.conftest import fresh_database


@pytest.fixture(scope="module")
def property_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A migrated database of the module's own, which its examples share (hypothesis runs
    many examples per test; each builds its world anew in it)."""
    with fresh_database(tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])) as url:

        async def setup() -> None:
            engine = create_engine(url)
            try:
                await migrate(engine)
            finally:
                await engine.dispose()

        asyncio.run(setup())
        yield url
