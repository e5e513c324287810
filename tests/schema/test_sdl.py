"""The SDL checked in at ``schema.graphql`` is the schema the server serves, so clients can
generate their types from the repository. After changing the schema, regenerate it with
``.venv/bin/signoff schema > schema.graphql``."""

from __future__ import annotations

import graphql
from httpx import AsyncClient

from signoff.schema import build_schema
from tests.conftest import checked_once
from tests.processes import ROOT, run_cli, signoff_env

pytestmark = checked_once

SDL = ROOT / "schema.graphql"
REGENERATE = "run `.venv/bin/signoff schema > schema.graphql`"


def test_checked_in_sdl_is_the_schema() -> None:
    assert SDL.read_text() == build_schema().as_str() + "\n", (
        f"schema.graphql is stale: {REGENERATE}"
    )


def test_signoff_schema_prints_the_checked_in_sdl() -> None:
    result = run_cli("schema", env=signoff_env("sqlite:///unused.db"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == SDL.read_text()


async def test_served_schema_matches_the_sdl(client: AsyncClient) -> None:
    """What introspection over HTTP gives a code generator is the checked-in SDL."""
    response = await client.post(
        "/graphql",
        json={"query": graphql.get_introspection_query(descriptions=True, specified_by_url=True)},
    )
    served = graphql.build_client_schema(response.json()["data"])
    checked_in = graphql.build_schema(SDL.read_text())
    sort = graphql.lexicographic_sort_schema
    assert graphql.print_schema(sort(served)) == graphql.print_schema(sort(checked_in))
