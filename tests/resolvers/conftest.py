"""What the resolvers' property tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import migrated_database


@pytest.fixture(scope="module")
def property_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A migrated database of the module's own, which its examples share (hypothesis runs
    many examples per test; each builds its world anew in it)."""
    directory = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    with migrated_database(directory) as url:
        yield url
